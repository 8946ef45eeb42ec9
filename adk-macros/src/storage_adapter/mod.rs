//! `storage_adapter!`: a struct plus an `impl { name: callback, .., ..noop }` list becomes the struct
//! and its `adk::storage::StorageAdapter` impl.
//!
//! `parse` reads the tokens into [`parse::Input`] without judging them, `validate` checks the
//! callback list against [`CALLBACKS`] and collects every mistake with the span of the user's token,
//! `expand` writes the impl. Signature checks that need the type checker are emitted by `expand` as
//! calls through the checker traits in `adk::storage::callback`, spanned at the user's callback.

use proc_macro2::TokenStream;

mod expand;
mod parse;
mod validate;

/// Expands one `storage_adapter!` invocation.
///
/// Whatever goes wrong, the user's struct is emitted, and so is an impl in which every callback
/// that could not be used falls back to the no-op baseline, so the type keeps working while the
/// errors are fixed and one build reports every mistake.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let parsed = parse::parse(input);
    let checked = validate::validate(&parsed);
    expand::expand(&parsed, &checked)
}

/// A type a callback receives or returns, with the path generated code uses and the name shown in
/// messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    Memory,
    Message,
    Thought,
    ToolCall,
    Tool,
    Retrievable,
    StandingInstruction,
    /// A record id.
    Id,
    ConduitBytes,
    MediaReader,
    SpoolReader,
}

impl Value {
    /// How messages spell the type.
    pub(crate) fn display(self) -> &'static str {
        match self {
            Self::Memory => "Memory",
            Self::Message => "Message",
            Self::Thought => "Thought",
            Self::ToolCall => "ToolCall",
            Self::Tool => "Tool",
            Self::Retrievable => "Retrievable",
            Self::StandingInstruction => "StandingInstruction",
            Self::Id => "String",
            Self::ConduitBytes => "ConduitBytes",
            Self::MediaReader => "MediaReader",
            Self::SpoolReader => "SpoolReader",
        }
    }

    /// The absolute path generated code names. Every type is re-exported from
    /// `adk::storage::callback` so the macro does not depend on where each one is defined.
    pub(crate) fn path(self) -> TokenStream {
        if self == Self::Id {
            return quote::quote!(::std::string::String);
        }
        let name = proc_macro2::Ident::new(self.display(), proc_macro2::Span::call_site());
        quote::quote!(::adk::storage::callback::#name)
    }
}

/// What a callback's future resolves to inside `Result<_, StorageError>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    Unit,
    List(Value),
    Reader(Value),
    /// A reader, or `None` when nothing is stored under the id.
    Found(Value),
}

impl Output {
    pub(crate) fn display(self) -> String {
        match self {
            Self::Unit => "()".to_owned(),
            Self::List(value) => format!("Vec<{}>", value.display()),
            Self::Reader(value) => value.display().to_owned(),
            Self::Found(value) => format!("Option<{}>", value.display()),
        }
    }

    pub(crate) fn path(self) -> TokenStream {
        match self {
            Self::Unit => quote::quote!(()),
            Self::List(value) => {
                let value = value.path();
                quote::quote!(::std::vec::Vec<#value>)
            }
            Self::Reader(value) => value.path(),
            Self::Found(value) => {
                let value = value.path();
                quote::quote!(::core::option::Option<#value>)
            }
        }
    }
}

/// One of the 29 methods of `StorageAdapter`.
#[derive(Debug)]
pub(crate) struct Callback {
    pub(crate) name: &'static str,
    /// The parameters after `ctx: &StorageContext`.
    pub(crate) params: &'static [(&'static str, Value)],
    pub(crate) output: Output,
}

impl Callback {
    /// `(ctx: &StorageContext, message: Message)`, as the docs write it.
    pub(crate) fn parameter_list(&self) -> String {
        let mut list = String::from("(ctx: &StorageContext");
        for (name, value) in self.params {
            list.push_str(&format!(", {name}: {}", value.display()));
        }
        list.push(')');
        list
    }

    /// `async fn(&StorageContext, Message) -> Result<(), StorageError>`, as the checker traits'
    /// labels in `adk::storage::callback` spell it (a unit test keeps the two in step).
    #[cfg(test)]
    pub(crate) fn signature(&self) -> String {
        let mut signature = String::from("async fn(&StorageContext");
        for (_, value) in self.params {
            signature.push_str(", ");
            signature.push_str(value.display());
        }
        signature.push_str(&format!(
            ") -> Result<{}, StorageError>",
            self.output.display()
        ));
        signature
    }

    /// How many parameters a closure for this callback takes, `ctx` included.
    pub(crate) fn arity(&self) -> usize {
        self.params.len() + 1
    }

    /// `StoreMessage` for `store_message`: the stem of the checker traits' names.
    pub(crate) fn camel_case(&self) -> String {
        self.name
            .split('_')
            .map(|word| {
                let mut chars = word.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                    None => String::new(),
                }
            })
            .collect()
    }
}

const fn fetch(name: &'static str, item: Value) -> Callback {
    Callback {
        name,
        params: &[],
        output: Output::List(item),
    }
}

const fn write(name: &'static str, params: &'static [(&'static str, Value)]) -> Callback {
    Callback {
        name,
        params,
        output: Output::Unit,
    }
}

/// The 29 callbacks in the order of `StorageAdapter`'s documentation.
pub(crate) const CALLBACKS: [Callback; 29] = [
    fetch("fetch_memories", Value::Memory),
    fetch("fetch_messages", Value::Message),
    fetch("fetch_thoughts", Value::Thought),
    fetch("fetch_tool_calls", Value::ToolCall),
    fetch("fetch_tools", Value::Tool),
    fetch("fetch_retrievables", Value::Retrievable),
    fetch("refresh_standing_instructions", Value::StandingInstruction),
    write("store_memory", &[("memory", Value::Memory)]),
    write("mutate_memory", &[("memory", Value::Memory)]),
    write("delete_memory", &[("id", Value::Id)]),
    write("store_message", &[("message", Value::Message)]),
    write("mutate_message", &[("message", Value::Message)]),
    write("delete_message", &[("id", Value::Id)]),
    write("store_thought", &[("thought", Value::Thought)]),
    write("mutate_thought", &[("thought", Value::Thought)]),
    write("delete_thought", &[("id", Value::Id)]),
    write("store_tool_call", &[("tool_call", Value::ToolCall)]),
    write("mutate_tool_call", &[("tool_call", Value::ToolCall)]),
    write("delete_tool_call", &[("id", Value::Id)]),
    write("store_retrievable", &[("retrievable", Value::Retrievable)]),
    write("mutate_retrievable", &[("retrievable", Value::Retrievable)]),
    write("delete_retrievable", &[("id", Value::Id)]),
    write(
        "store_standing_instruction",
        &[("instruction", Value::StandingInstruction)],
    ),
    write(
        "mutate_standing_instruction",
        &[("instruction", Value::StandingInstruction)],
    ),
    write(
        "delete_standing_instruction",
        &[("instruction", Value::StandingInstruction)],
    ),
    Callback {
        name: "store_media_bytes",
        params: &[("id", Value::Id), ("bytes", Value::ConduitBytes)],
        output: Output::Reader(Value::MediaReader),
    },
    Callback {
        name: "store_retrievable_bytes",
        params: &[("id", Value::Id), ("bytes", Value::ConduitBytes)],
        output: Output::Reader(Value::SpoolReader),
    },
    Callback {
        name: "read_media_bytes",
        params: &[("id", Value::Id)],
        output: Output::Found(Value::MediaReader),
    },
    Callback {
        name: "read_retrievable_bytes",
        params: &[("id", Value::Id)],
        output: Output::Found(Value::SpoolReader),
    },
];

/// Each byte conduit and the callback that reads its bytes back: listed one without the other,
/// `..noop` would read back from a store the listed conduit never wrote to.
pub(crate) const CONDUIT_READS: [(&str, &str); 2] = [
    ("store_media_bytes", "read_media_bytes"),
    ("store_retrievable_bytes", "read_retrievable_bytes"),
];

#[cfg(test)]
mod tests {
    use super::CALLBACKS;

    /// The checker traits' messages in `adk` are spelt out by hand; they must show the same
    /// signatures the macro is built around, or users would be told to write the wrong thing.
    #[test]
    fn checker_trait_labels_show_the_signatures_the_macro_calls() {
        // The checker table is split by kind of callback over the files of this directory.
        let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/../adk/src/storage/callback");
        let mut source = String::new();
        for entry in std::fs::read_dir(directory).expect("adk/src/storage/callback is readable") {
            let path = entry.expect("a directory entry").path();
            source += &std::fs::read_to_string(&path).expect("a checker file is readable");
        }
        for callback in &CALLBACKS {
            let signature = callback.signature();
            let method_signature = signature.replacen("async fn(", "async fn(&self, ", 1);
            let block_start = source
                .find(&format!("\n    {} {{\n", callback.name))
                .unwrap_or_else(|| panic!("no checker entry for `{}`", callback.name));
            let block = &source[block_start..];
            let block = &block[..block.find("\n    }").unwrap_or(block.len())];
            let camel = callback.camel_case();
            for expected in [
                format!("callback: {camel}Callback,"),
                format!("method: {camel}Method,"),
                format!("future: {camel}Future,"),
                format!("callback_label: \"expected `{signature}`\","),
                format!("method_label: \"expected `{method_signature}`\","),
                format!("is not a valid `{}` callback", callback.name),
                format!("is not a valid `{}` method", callback.name),
            ] {
                assert!(
                    block.contains(&expected),
                    "`{}`: missing {expected}",
                    callback.name
                );
            }
        }
    }

    #[test]
    fn parameter_lists_name_every_parameter_with_its_type() {
        let conduit = CALLBACKS
            .iter()
            .find(|callback| callback.name == "store_media_bytes");
        let conduit = conduit.expect("store_media_bytes is a callback");
        assert_eq!(
            conduit.parameter_list(),
            "(ctx: &StorageContext, id: String, bytes: ConduitBytes)"
        );
        assert_eq!(
            conduit.signature(),
            "async fn(&StorageContext, String, ConduitBytes) -> Result<MediaReader, StorageError>"
        );
        assert_eq!(conduit.camel_case(), "StoreMediaBytes");
    }
}
