//! `#[derive(MiddlewareState)]`: a struct becomes typed middleware state, with its key, version,
//! persistence and scope fixed while the user's crate compiles.
//!
//! `parse` reads the item and every `#[middleware_state(..)]` option as written, `validate`
//! turns them into [`validate::Options`] and collects every mistake with the span of the user's
//! token, and `expand` writes the `::adk::middleware_state::MiddlewareState` impl, the spanned
//! assertions (serde data when persistent, `Default`, `Clone`) and the program-wide declaration
//! of the key. Every mistake found is reported in one build.

mod expand;
mod parse;
mod validate;

use proc_macro2::TokenStream;

/// Expands `#[derive(MiddlewareState)]` on `input`.
pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let item = match syn::parse2::<syn::DeriveInput>(input) {
        Ok(item) => item,
        Err(error) => return error.to_compile_error(),
    };
    let mut errors = Vec::new();
    let parsed = parse::item(&item, &mut errors);
    let options = validate::options(&parsed, &mut errors);
    if !errors.is_empty() {
        // The errors, and a bare impl so the type's uses add no "is not middleware state".
        let mut output: TokenStream = errors.iter().map(syn::Error::to_compile_error).collect();
        output.extend(expand::rejected(&parsed, &options));
        return output;
    }
    expand::state(&parsed, &options)
}

#[cfg(test)]
mod tests {
    use quote::quote;

    fn expanded(input: proc_macro2::TokenStream) -> String {
        super::derive(input).to_string()
    }

    #[test]
    fn a_plain_struct_is_transient_thread_scoped_version_one_keyed_by_its_path() {
        let text = expanded(quote! { #[derive(Default, Clone)] struct Breaker { failures: u32 } });
        assert!(text.contains("Persistence :: Transient"), "{text}");
        assert!(text.contains("const VERSION : u32 = 1u32"), "{text}");
        assert!(text.contains("module_path ! ()"), "{text}");
        assert!(text.contains("inventory :: submit !"), "{text}");
    }

    #[test]
    fn every_option_reaches_the_impl() {
        let text = expanded(quote! {
            #[middleware_state(persistent, scope = session, version = 3, key = "acme.plan")]
            #[middleware_state(migrate = upgrade, default_on_mismatch)]
            struct Plan { step: u32 }
        });
        assert!(text.contains("Persistence :: Persistent"), "{text}");
        assert!(text.contains("StateScope :: Session"), "{text}");
        assert!(text.contains("const VERSION : u32 = 3u32"), "{text}");
        assert!(text.contains("\"acme.plan\""), "{text}");
        // The migration is called through a typed helper, so a wrong signature is reported at
        // `upgrade` with the expected one.
        assert!(
            text.contains("middleware_state :: migrate (") && text.contains(", upgrade ,"),
            "{text}"
        );
        assert!(
            text.contains("const DEFAULT_ON_MISMATCH : bool = true"),
            "{text}"
        );
    }

    #[test]
    fn every_mistake_is_reported_in_one_build() {
        let text = expanded(quote! {
            #[middleware_state(persistant, version = 0, scope = branch)]
            enum Mode<T> { A(T) }
        });
        for fragment in [
            "needs a struct",
            "cannot be generic",
            "did you mean `persistent`",
            "version 0",
            "did you mean `thread`",
        ] {
            assert!(text.contains(fragment), "{fragment}: {text}");
        }
    }
}
