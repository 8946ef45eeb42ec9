//! `#[derive(StructuredOutput)]`: a struct becomes a reply shape for OpenAI's strict
//! structured outputs, checked against strict mode's subset while the user's crate compiles.
//!
//! `parse` reads the item, its fields and the serde / schemars / validator keys written on
//! them (darling reads `#[structured_output(..)]`), `validate` checks them against the subset
//! and collects every mistake with the span of the user's token, naming the field and the fix,
//! and `expand` writes the `::adk::openai` impls plus a spanned `StrictSchema` assertion at each
//! field type it could not judge by its name. Every mistake found is reported in one build.

mod expand;
mod parse;
mod validate;

use proc_macro2::TokenStream;

/// Expands `#[derive(StructuredOutput)]` on `input`.
pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let item = match syn::parse2::<syn::DeriveInput>(input) {
        Ok(item) => item,
        Err(error) => return error.to_compile_error(),
    };
    let mut errors = Vec::new();
    let parsed = parse::item(&item, &mut errors);
    let checked = validate::item(&parsed, &mut errors);
    let errors: TokenStream = errors.iter().map(syn::Error::to_compile_error).collect();
    expand::item(&parsed, &checked, errors)
}

#[cfg(test)]
mod tests {
    use quote::quote;

    fn expanded(input: proc_macro2::TokenStream) -> String {
        super::derive(input).to_string()
    }

    #[test]
    fn a_struct_gets_both_impls_a_snake_case_name_and_checks_for_unknown_field_types() {
        let text = expanded(quote! {
            struct WeatherReport { city: String, days: Vec<Day>, note: Option<String> }
        });
        assert!(
            text.contains("StructuredOutput for WeatherReport"),
            "{text}"
        );
        assert!(text.contains("StrictSchema for WeatherReport"), "{text}");
        assert!(text.contains("\"weather_report\""), "{text}");
        assert!(text.contains("__assert_strict :: < Day >"), "{text}");
        assert!(!text.contains("__assert_strict :: < String >"), "{text}");
        assert!(!text.contains("compile_error"), "{text}");
    }

    #[test]
    fn a_unit_enum_is_a_field_type_not_a_reply() {
        let text = expanded(quote! { enum Sky { Clear, Cloudy } });
        assert!(text.contains("StrictSchema for Sky"), "{text}");
        assert!(!text.contains("StructuredOutput for Sky"), "{text}");
    }

    #[test]
    fn every_mistake_is_reported_in_one_build_naming_the_field() {
        let text = expanded(quote! {
            #[structured_output(name = "has space")]
            struct Bad {
                #[serde(default)]
                unit: Option<String>,
                tags: std::collections::HashSet<String>,
                count: u32,
                #[schemars(range(min = 1))]
                days: i64,
                #[serde(flatten)]
                extra: Extra,
            }
        });
        for fragment in [
            "`name` must be 1 to 64",
            "field `unit`",
            "field `tags`",
            "field `count`",
            "field `days`",
            "field `extra`",
        ] {
            assert!(text.contains(fragment), "{fragment}: {text}");
        }
        assert_eq!(text.matches("compile_error").count(), 6, "{text}");
    }
}
