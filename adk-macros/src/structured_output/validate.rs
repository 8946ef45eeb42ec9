//! Strict mode's subset, checked on what the user wrote. Each error names the field, what
//! strict mode refuses and the fix.
//!
//! The subset kept is the one every strict-mode model takes (OpenAI's "Supported schemas"):
//! every property required (a field that may be absent is an `Option`, sent as nullable),
//! objects closed, `anyOf` but not `oneOf`/`allOf`, and none of the constraint keywords
//! (`minimum`/`maximum`, `minLength`/`maxLength`, `pattern`, `format`, `minItems`,
//! `uniqueItems`) that some models refuse.

use syn::spanned::Spanned;
use syn::{GenericArgument, PathArguments, Type};

use super::parse::{Field, Key, Kind, Parsed};

/// What the checks decided, for `expand`.
pub(super) struct Checked {
    /// The `json_schema.name`.
    pub(super) name: String,
    /// Whether the item is a reply shape (a struct), not only a field type (an enum).
    pub(super) is_reply: bool,
    /// Field types to assert `StrictSchema` on: those not judged by their name.
    pub(super) assertions: Vec<Type>,
}

pub(super) fn item(parsed: &Parsed, errors: &mut Vec<syn::Error>) -> Checked {
    let ident = &parsed.ident;
    if let Some(param) = parsed.generics.params.first() {
        errors.push(syn::Error::new(
            param.span(),
            format!(
                "`{ident}` cannot be generic: a structured output is one fixed schema; write a \
                 struct per reply shape"
            ),
        ));
    }
    let name = match &parsed.name {
        Some(name) => {
            let valid = (1..=64).contains(&name.len())
                && name
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
            if !valid {
                errors.push(syn::Error::new(
                    name.span(),
                    format!(
                        "`name` must be 1 to 64 ASCII letters, digits, `_` or `-` (OpenAI's rule \
                         for `json_schema.name`); {:?} is not",
                        name.as_str()
                    ),
                ));
            }
            name.as_str().to_owned()
        }
        None => snake_case(&ident.to_string()),
    };
    for key in &parsed.container_keys {
        if let Some(problem) = container_problem(key) {
            errors.push(syn::Error::new(key.span, format!("`{ident}`: {problem}")));
        }
    }
    let mut assertions = Vec::new();
    let is_reply = match &parsed.kind {
        Kind::Struct(fields) => {
            for field in fields {
                check_field(field, &mut assertions, errors);
            }
            true
        }
        Kind::Unnamed(span) => {
            errors.push(syn::Error::new(
                *span,
                format!(
                    "`{ident}` needs named fields: strict mode's reply is an object whose \
                     properties are the fields; write `struct {ident} {{ name: Type, .. }}`"
                ),
            ));
            true
        }
        Kind::Enum(variants) => {
            for (variant, data) in variants {
                if let Some(span) = data {
                    errors.push(syn::Error::new(
                        *span,
                        format!(
                            "variant `{variant}` of `{ident}` carries data: schemars writes such \
                             an enum as `oneOf`, which strict mode refuses; use unit variants \
                             (sent as a string `enum`), or a struct with an `Option` field per \
                             case"
                        ),
                    ));
                }
            }
            false
        }
        Kind::Union(span) => {
            errors.push(syn::Error::new(
                *span,
                format!("`{ident}` is a union: derive `StructuredOutput` on a struct or an enum"),
            ));
            false
        }
    };
    Checked {
        name,
        is_reply,
        assertions,
    }
}

fn container_problem(key: &Key) -> Option<String> {
    let problem = match (key.attribute.as_str(), key.name.as_str()) {
        ("serde", "default") => {
            "`#[serde(default)]` lets every field be absent, and strict mode requires every \
             property; remove it and make the fields that may be absent `Option<..>`"
        }
        ("serde", "transparent") => {
            "`#[serde(transparent)]` makes the reply its one field's type, and strict mode's \
             reply must be an object; remove it"
        }
        ("serde", "untagged" | "tag" | "content") => {
            "a tagged or untagged enum becomes `oneOf`, which strict mode refuses; use unit \
             variants, or a struct with an `Option` field per case"
        }
        _ => return None,
    };
    Some(problem.to_owned())
}

fn check_field(field: &Field, assertions: &mut Vec<Type>, errors: &mut Vec<syn::Error>) {
    let name = field
        .ident
        .as_ref()
        .map_or_else(String::new, ToString::to_string);
    let mut skipped = false;
    let mut refused = false;
    for key in &field.keys {
        if key.attribute == "serde" && matches!(key.name.as_str(), "skip" | "skip_deserializing") {
            skipped = true;
        }
        if let Some(problem) = key_problem(key) {
            refused = true;
            errors.push(syn::Error::new(
                key.span,
                format!("field `{name}`: {problem}"),
            ));
        }
    }
    if skipped {
        // Not in the schema, not read from the reply.
        return;
    }
    match type_problem(&field.ty) {
        Some((span, problem)) => {
            errors.push(syn::Error::new(span, format!("field `{name}`: {problem}")));
        }
        None if !refused => collect_unjudged(&field.ty, assertions),
        None => {}
    }
    let _ = field.span;
}

fn key_problem(key: &Key) -> Option<String> {
    let attribute = &key.attribute;
    let written = format!("{}` in `#[{attribute}(..)]", key.name);
    let problem = match (attribute.as_str(), key.name.as_str()) {
        ("serde", "default") => format!(
            "`{written}` lets the field be absent, and strict mode requires every property; \
             remove `default` and make the field `Option<..>` (sent as nullable, read as `None`)"
        ),
        ("serde", "flatten") => format!(
            "`{written}` merges another type's properties (or a map's) into this object, which \
             the derive cannot check; make it a named field of that type instead"
        ),
        (_, "range") => format!(
            "`{written}` becomes `minimum`/`maximum`, which strict mode refuses on some models; \
             remove it, say the bounds in the field's doc comment (sent as its description) and \
             check them after reading the reply"
        ),
        (_, "length") => format!(
            "`{written}` becomes `minLength`/`maxLength` or `minItems`/`maxItems`, which strict \
             mode refuses on some models; remove it, say the bounds in the field's doc comment \
             and check them after reading the reply"
        ),
        (_, "regex" | "pattern") => format!(
            "`{written}` becomes `pattern`, which strict mode refuses on some models; remove it, \
             describe the shape in the field's doc comment and check it after reading the reply"
        ),
        (_, "email" | "url") => format!(
            "`{written}` becomes a `format`, which strict mode refuses on some models; remove it \
             and check the value after reading the reply"
        ),
        ("schemars", "with" | "schema_with") => format!(
            "`{written}` replaces the field's schema with one the derive cannot check; remove it \
             and give the field a type that derives `StructuredOutput`"
        ),
        _ => return None,
    };
    Some(problem)
}

/// The last segment of a path type and its generic arguments.
fn last_segment(ty: &Type) -> Option<(String, Vec<&Type>)> {
    let Type::Path(path) = ty else { return None };
    let segment = path.path.segments.last()?;
    let arguments = match &segment.arguments {
        PathArguments::AngleBracketed(arguments) => arguments
            .args
            .iter()
            .filter_map(|argument| match argument {
                GenericArgument::Type(ty) => Some(ty),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some((segment.ident.to_string(), arguments))
}

/// What strict mode refuses in `ty`, judged by the type's name, with the span of the part.
fn type_problem(ty: &Type) -> Option<(proc_macro2::Span, String)> {
    let problem = match ty {
        Type::Tuple(tuple) if !tuple.elems.is_empty() => {
            "a tuple becomes `prefixItems`, which strict mode refuses; use a struct with named \
             fields"
        }
        Type::Array(_) => {
            "a fixed-size array becomes `minItems`/`maxItems`, which strict mode refuses on some \
             models; use a `Vec`"
        }
        Type::Reference(_) => "a borrowed type cannot be read from a reply; use an owned type",
        Type::Group(group) => return type_problem(&group.elem),
        Type::Paren(paren) => return type_problem(&paren.elem),
        Type::Path(_) => {
            let (name, arguments) = last_segment(ty)?;
            match name.as_str() {
                "Option" | "Vec" | "Box" => {
                    return arguments.into_iter().find_map(type_problem);
                }
                "HashMap" | "BTreeMap" | "IndexMap" | "Map" => {
                    "a map becomes an object without fixed properties, and strict mode requires \
                     every property to be listed; use a struct, or a `Vec` of key/value structs"
                }
                "HashSet" | "BTreeSet" | "IndexSet" => {
                    "a set becomes `uniqueItems`, which strict mode refuses; use a `Vec` and \
                     remove duplicates after reading the reply"
                }
                "Value" => {
                    "`Value` is any JSON, and strict mode needs a schema for every property; \
                     use a struct"
                }
                "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => {
                    "unsigned integers become `minimum: 0`, which strict mode refuses on some \
                     models; use `i64` and check the sign after reading the reply"
                }
                "i8" | "i16" => {
                    "`i8` and `i16` become `minimum`/`maximum`, which strict mode refuses on \
                     some models; use `i32` or `i64`"
                }
                "i128" | "isize" => {
                    "use `i64`: schemars gives this type a `format` strict mode does not know"
                }
                "char" => {
                    "`char` becomes `minLength`/`maxLength`, which strict mode refuses on some \
                     models; use `String`"
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    Some((ty.span(), problem.to_owned()))
}

/// The types inside `ty` (through `Option`, `Vec`, `Box`) that are not known by name: each is
/// asserted to implement `StrictSchema`, at its own span.
fn collect_unjudged(ty: &Type, out: &mut Vec<Type>) {
    match last_segment(ty) {
        Some((name, arguments)) if matches!(name.as_str(), "Option" | "Vec" | "Box") => {
            for argument in arguments {
                collect_unjudged(argument, out);
            }
        }
        Some((name, _))
            if matches!(
                name.as_str(),
                "String" | "bool" | "i32" | "i64" | "f32" | "f64"
            ) => {}
        _ => out.push(ty.clone()),
    }
}

/// `WeatherReport` → `weather_report`.
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (index, character) in name.char_indices() {
        if character.is_uppercase() {
            if index > 0 && !name[..index].ends_with('_') {
                out.push('_');
            }
            out.extend(character.to_lowercase());
        } else {
            out.push(character);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::snake_case;

    #[test]
    fn type_names_become_snake_case() {
        assert_eq!(snake_case("WeatherReport"), "weather_report");
        assert_eq!(snake_case("Forecast"), "forecast");
        assert_eq!(snake_case("A_B"), "a_b");
    }
}
