//! Between MCP's values and adk's: a listed MCP tool becomes an adk [`Tool`] (name rule,
//! schema, annotations in its meta), a `tools/call` result becomes a [`ToolOutput`].

use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value, json};

use super::McpError;
use super::config::is_name;
use crate::primitives::{
    Media, MediaKind, SpooledArtifact, Tool, ToolEffect, ToolHandler, ToolInvocation, ToolOutput,
    TrustTier,
};

/// The longest tool name models accept (OpenAI's limit; Anthropic's is the same).
pub(super) const MAX_TOOL_NAME: usize = 64;

/// What adk knows about an MCP tool, kept in the adk tool's [`meta`](Tool::meta) under
/// `"mcp"` and read back with [`McpToolInfo::of`].
///
/// The effect comes from the server's annotations, which are hints from a server you may not
/// trust: a tool without annotations is taken as side-effecting and destructive, as the MCP
/// specification's defaults say (`readOnlyHint: false`, `destructiveHint: true`,
/// `idempotentHint: false`).
///
/// ```
/// use adk::mcp::McpToolInfo;
/// use adk::primitives::Tool;
/// use serde_json::json;
///
/// let tool = Tool::builder("files_read")
///     .description("Reads a file.")
///     .meta(json!({"mcp": {"server": "files", "tool": "read", "read_only": true,
///                          "destructive": false, "idempotent": true,
///                          "annotations": {"readOnlyHint": true}}})
///         .as_object().unwrap().clone())
///     .handler(|_, _| async { Ok("") })
///     .build()?;
/// let info = McpToolInfo::of(&tool).unwrap();
/// assert_eq!((info.server.as_str(), info.tool.as_str()), ("files", "read"));
/// assert!(info.read_only && !info.side_effecting());
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct McpToolInfo {
    /// The server's name.
    pub server: String,
    /// The tool's name on the server (without adk's prefix).
    pub tool: String,
    /// `readOnlyHint: true`: the tool does not change its environment.
    pub read_only: bool,
    /// Not read-only, and `destructiveHint` is not `false`: it may delete or overwrite.
    pub destructive: bool,
    /// Read-only, or `idempotentHint: true`: calling it again with the same arguments has no
    /// further effect.
    pub idempotent: bool,
    /// The server's annotations as sent (`{}` when it sent none).
    #[serde(default)]
    pub annotations: Value,
}

impl McpToolInfo {
    /// The MCP facts of `tool`, when it came from an MCP server.
    pub fn of(tool: &Tool) -> Option<Self> {
        serde_json::from_value(tool.meta().get("mcp")?.clone()).ok()
    }

    /// Whether the tool may change its environment (not read-only).
    pub fn side_effecting(&self) -> bool {
        !self.read_only
    }

    /// The adk effect the annotations map to: `readOnlyHint: true` is
    /// [read-only](ToolEffect::read_only); `idempotentHint: true` is
    /// [idempotent on its arguments](ToolEffect::idempotent_on_arguments) (MCP defines it as
    /// "calling it again with the same arguments has no further effect"); anything else, or no
    /// annotations, is [at-most-once](ToolEffect::at_most_once). The MCP tools adk offers
    /// carry this effect.
    pub fn effect(&self) -> ToolEffect {
        if self.read_only {
            ToolEffect::read_only()
        } else if self.idempotent {
            ToolEffect::idempotent_on_arguments()
        } else {
            ToolEffect::at_most_once()
        }
    }
}

/// The adk tool for a listed MCP tool, or why it cannot be offered.
pub(super) fn adk_tool(
    server: &str,
    prefix: Option<&str>,
    listed: &rmcp::model::Tool,
    handler: ToolHandler,
) -> Result<Tool, McpError> {
    let mcp_name = listed.name.as_ref();
    let invalid = |reason: String| McpError::InvalidTool {
        server: server.to_owned(),
        tool: mcp_name.chars().take(200).collect(),
        reason,
    };
    let name = match prefix {
        Some(prefix) => format!("{prefix}_{mcp_name}"),
        None => mcp_name.to_owned(),
    };
    if !is_name(mcp_name, MAX_TOOL_NAME) {
        return Err(invalid(name_problem(mcp_name)));
    }
    if name.len() > MAX_TOOL_NAME {
        return Err(invalid(format!(
            "with its prefix its name {name:?} is {} characters, over the {MAX_TOOL_NAME} models \
             accept; give the server a shorter prefix or none",
            name.len()
        )));
    }
    let description = listed
        .description
        .as_deref()
        .filter(|text| !text.trim().is_empty())
        .or(listed.title.as_deref())
        .map_or_else(
            || format!("The tool {mcp_name:?} of the MCP server {server:?}."),
            str::to_owned,
        );
    let annotations = listed.annotations.as_ref();
    let read_only = annotations.and_then(|hints| hints.read_only_hint) == Some(true);
    let info = McpToolInfo {
        server: server.to_owned(),
        tool: mcp_name.to_owned(),
        read_only,
        destructive: !read_only
            && annotations.and_then(|hints| hints.destructive_hint) != Some(false),
        idempotent: read_only || annotations.and_then(|hints| hints.idempotent_hint) == Some(true),
        annotations: annotations
            .and_then(|hints| serde_json::to_value(hints).ok())
            .unwrap_or_else(|| json!({})),
    };
    let mut meta = Map::new();
    meta.insert(
        "mcp".to_owned(),
        serde_json::to_value(&info).unwrap_or(Value::Null),
    );
    Tool::builder(name)
        .description(description)
        .input_schema(Value::Object((*listed.input_schema).clone()))
        .meta(meta)
        .effect(info.effect())
        .with_stored_handler(handler)
        .build()
        .map_err(|error| invalid(error.to_string()))
}

fn name_problem(name: &str) -> String {
    if name.is_empty() {
        return "its name is empty".to_owned();
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return format!(
            "its name contains {bad:?}; models accept only ASCII letters, digits, '_' and '-' \
             in tool names"
        );
    }
    format!(
        "its name is {} characters, over the {MAX_TOOL_NAME} models accept",
        name.chars().count()
    )
}

/// A `tools/call` result as adk's output.
///
/// - `isError: true`: [`McpError::ToolFailed`] with the result's text (the model reads it).
/// - Only text (and resource links, rendered as text): [`ToolOutput::Text`], the parts joined
///   by newlines; with no content but `structuredContent`, that JSON as text.
/// - A single embedded text resource: kept as retrievable bytes through the turn's storage,
///   [`ToolOutput::Artifact`].
/// - Anything else (images, audio, blobs, or a mix): [`ToolOutput::Media`], one per part, the
///   bytes stored through the turn's storage; text parts become `text/plain` documents.
///   Media from an MCP server is third-party private ([`TrustTier::ThirdPartyPrivate`]).
pub(super) async fn tool_output(
    server: &str,
    tool: &str,
    result: CallToolResult,
    invocation: &ToolInvocation,
) -> Result<ToolOutput, McpError> {
    let bad = |reason: String| McpError::BadResult {
        server: server.to_owned(),
        tool: tool.to_owned(),
        reason,
    };
    if result.is_error == Some(true) {
        let mut text = texts(&result.content).join("\n");
        if text.is_empty() {
            text = result
                .structured_content
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_else(|| "the tool reported an error without a message".to_owned());
        }
        return Err(McpError::ToolFailed {
            server: server.to_owned(),
            tool: tool.to_owned(),
            text,
        });
    }
    let textual = result
        .content
        .iter()
        .all(|part| matches!(part, ContentBlock::Text(_) | ContentBlock::ResourceLink(_)));
    if textual {
        let text = texts(&result.content).join("\n");
        if text.is_empty()
            && let Some(structured) = &result.structured_content
        {
            return Ok(ToolOutput::Text(structured.to_string()));
        }
        return Ok(ToolOutput::Text(text));
    }
    if let [ContentBlock::Resource(embedded)] = result.content.as_slice()
        && let ResourceContents::TextResourceContents { text, .. } = &embedded.resource
    {
        let id = crate::ids::time_ordered_string();
        let reader = invocation
            .store_retrievable_bytes(id, text.clone().into_bytes())
            .await
            .map_err(|error| bad(format!("storing the resource failed: {error}")))?;
        return Ok(ToolOutput::Artifact(SpooledArtifact::new(reader)));
    }
    let mut media = Vec::with_capacity(result.content.len());
    for (index, part) in result.content.iter().enumerate() {
        let (kind, mime, bytes, name) = match part {
            ContentBlock::Text(text) => (
                MediaKind::Document,
                "text/plain".to_owned(),
                text.text.clone().into_bytes(),
                format!("text-{index}.txt"),
            ),
            ContentBlock::ResourceLink(link) => (
                MediaKind::Document,
                "text/plain".to_owned(),
                link_text(link).into_bytes(),
                format!("link-{index}.txt"),
            ),
            ContentBlock::Image(image) => (
                MediaKind::Image,
                image.mime_type.clone(),
                decode(&image.data).map_err(|error| bad(format!("image {index}: {error}")))?,
                format!("image-{index}"),
            ),
            ContentBlock::Audio(audio) => (
                MediaKind::Audio,
                audio.mime_type.clone(),
                decode(&audio.data).map_err(|error| bad(format!("audio {index}: {error}")))?,
                format!("audio-{index}"),
            ),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => (
                    MediaKind::Document,
                    mime_type.clone().unwrap_or_else(|| "text/plain".to_owned()),
                    text.clone().into_bytes(),
                    file_name(uri, index),
                ),
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => {
                    let mime = mime_type
                        .clone()
                        .unwrap_or_else(|| "application/octet-stream".to_owned());
                    (
                        kind_of(&mime),
                        mime,
                        decode(blob).map_err(|error| bad(format!("resource {uri}: {error}")))?,
                        file_name(uri, index),
                    )
                }
                other => (
                    MediaKind::Document,
                    "application/json".to_owned(),
                    serde_json::to_vec(other).unwrap_or_default(),
                    format!("resource-{index}.json"),
                ),
            },
            // A content kind newer than this mapping: kept as its JSON, as a document.
            #[allow(unreachable_patterns, reason = "ContentBlock is non_exhaustive")]
            other => (
                MediaKind::Document,
                "application/json".to_owned(),
                serde_json::to_vec(other).unwrap_or_default(),
                format!("part-{index}.json"),
            ),
        };
        let id = crate::ids::time_ordered_string();
        let reader = invocation
            .store_media_bytes(id.clone(), bytes)
            .await
            .map_err(|error| bad(format!("storing part {index} failed: {error}")))?;
        let item = Media::new(
            kind,
            mime,
            name,
            reader,
            TrustTier::ThirdPartyPrivate,
            kind.default_hazard(),
        )
        .and_then(|item| item.with_id(id))
        .map_err(|error| bad(error.to_string()))?
        .with_source(format!("mcp:{server}/{tool}"));
        media.push(item);
    }
    Ok(ToolOutput::Media(media))
}

fn texts(content: &[ContentBlock]) -> Vec<String> {
    content
        .iter()
        .filter_map(|part| match part {
            ContentBlock::Text(text) => Some(text.text.clone()),
            ContentBlock::ResourceLink(link) => Some(link_text(link)),
            _ => None,
        })
        .collect()
}

fn link_text(link: &rmcp::model::Resource) -> String {
    match &link.description {
        Some(description) => format!("[resource {} ({}): {description}]", link.uri, link.name),
        None => format!("[resource {} ({})]", link.uri, link.name),
    }
}

fn decode(data: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|error| format!("its data is not valid base64 ({error})"))
}

fn kind_of(mime: &str) -> MediaKind {
    match mime.split('/').next() {
        Some("image") => MediaKind::Image,
        Some("audio") => MediaKind::Audio,
        Some("video") => MediaKind::Video,
        _ => MediaKind::Document,
    }
}

fn file_name(uri: &str, index: usize) -> String {
    uri.rsplit('/')
        .next()
        .filter(|last| !last.is_empty())
        .map_or_else(|| format!("resource-{index}"), str::to_owned)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use rmcp::model::{ContentBlock, ToolAnnotations};
    use std::sync::Arc;

    fn listed(name: &str, schema: Value) -> rmcp::model::Tool {
        rmcp::model::Tool::new(
            name.to_owned(),
            "d".to_owned(),
            Arc::new(schema.as_object().cloned().unwrap_or_default()),
        )
    }

    fn handler() -> ToolHandler {
        Arc::new(|_, _| Box::pin(async { Ok(ToolOutput::Text(String::new())) }))
    }

    fn object() -> Value {
        json!({"type": "object", "properties": {}})
    }

    #[test]
    fn a_tool_is_named_prefix_underscore_name_and_keeps_its_schema() {
        let tool = adk_tool("files", Some("files"), &listed("read", object()), handler()).unwrap();
        assert_eq!(tool.name(), "files_read");
        assert_eq!(tool.input_schema(), &object());
        let unprefixed = adk_tool("files", None, &listed("read", object()), handler()).unwrap();
        assert_eq!(unprefixed.name(), "read");
    }

    #[test]
    fn names_models_refuse_are_typed_errors() {
        for (name, expected) in [
            ("has spaces", "contains ' '"),
            ("dotted.name", "contains '.'"),
            (&"n".repeat(200) as &str, "200 characters"),
        ] {
            let error = adk_tool("s", None, &listed(name, object()), handler()).unwrap_err();
            assert!(matches!(error, McpError::InvalidTool { .. }), "{error}");
            assert!(error.to_string().contains(expected), "{error}");
        }
        let long = "n".repeat(60);
        let error = adk_tool("s", Some("server"), &listed(&long, object()), handler()).unwrap_err();
        assert!(error.to_string().contains("with its prefix"), "{error}");
    }

    #[test]
    fn a_schema_that_is_not_an_object_schema_is_a_typed_error() {
        let error =
            adk_tool("s", None, &listed("t", json!({"type": "array"})), handler()).unwrap_err();
        assert!(error.to_string().contains("input_schema"), "{error}");
    }

    #[test]
    fn an_unannotated_tool_is_side_effecting_and_destructive() {
        let tool = adk_tool("s", None, &listed("t", object()), handler()).unwrap();
        let info = McpToolInfo::of(&tool).unwrap();
        assert!(info.side_effecting() && info.destructive && !info.idempotent);
        assert_eq!(info.annotations, json!({}));

        let mut annotated = listed("u", object());
        annotated.annotations = Some(ToolAnnotations::from_raw(
            None,
            Some(false),
            Some(false),
            Some(true),
            None,
        ));
        let info = McpToolInfo::of(&adk_tool("s", None, &annotated, handler()).unwrap()).unwrap();
        assert!(info.side_effecting() && !info.destructive && info.idempotent);
    }

    #[test]
    fn the_annotations_become_the_tools_effect() {
        use crate::primitives::EffectKind;
        let hinted = |read_only: Option<bool>, idempotent: Option<bool>| {
            let mut listed = listed("t", object());
            listed.annotations = Some(ToolAnnotations::from_raw(
                None, read_only, None, idempotent, None,
            ));
            adk_tool("s", None, &listed, handler())
                .unwrap()
                .effect()
                .kind()
        };
        let unannotated = adk_tool("s", None, &listed("t", object()), handler()).unwrap();
        assert_eq!(unannotated.effect().kind(), EffectKind::AtMostOnce);
        assert_eq!(hinted(Some(true), None), EffectKind::ReadOnly);
        assert_eq!(hinted(Some(false), Some(true)), EffectKind::Idempotent);
        assert_eq!(hinted(Some(false), Some(false)), EffectKind::AtMostOnce);
        let idempotent = {
            let mut listed = listed("t", object());
            listed.annotations = Some(ToolAnnotations::from_raw(
                None,
                None,
                None,
                Some(true),
                None,
            ));
            adk_tool("s", None, &listed, handler()).unwrap()
        };
        let key = |args| idempotent.effect().key("t", "c", &args).unwrap();
        assert_eq!(key(json!({"a": 1, "b": 2})), key(json!({"b": 2, "a": 1})));
    }

    fn result(content: Vec<ContentBlock>) -> CallToolResult {
        CallToolResult::success(content)
    }

    #[tokio::test]
    async fn results_map_to_text_media_artifacts_and_errors() {
        let invocation = ToolInvocation::new("t", "c");
        let text = tool_output(
            "s",
            "t",
            result(vec![ContentBlock::text("a"), ContentBlock::text("b")]),
            &invocation,
        )
        .await
        .unwrap();
        assert!(matches!(text, ToolOutput::Text(ref text) if text == "a\nb"));

        let mut structured = result(Vec::new());
        structured.structured_content = Some(json!({"t": 1}));
        let text = tool_output("s", "t", structured, &invocation)
            .await
            .unwrap();
        assert!(matches!(text, ToolOutput::Text(ref text) if text == r#"{"t":1}"#));

        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG");
        let media = tool_output(
            "s",
            "t",
            result(vec![
                ContentBlock::image(png, "image/png"),
                ContentBlock::text("caption"),
            ]),
            &invocation,
        )
        .await
        .unwrap();
        let ToolOutput::Media(media) = media else {
            panic!("media expected");
        };
        assert_eq!(media[0].kind(), MediaKind::Image);
        assert_eq!(media[0].trust_tier(), TrustTier::ThirdPartyPrivate);
        assert_eq!(&media[0].reader().read_all().await.unwrap()[..], b"\x89PNG");
        assert_eq!(media[1].mime_type(), "text/plain");

        let artifact = tool_output(
            "s",
            "t",
            result(vec![ContentBlock::embedded_text(
                "file:///a.txt",
                "line 1\nline 2",
            )]),
            &invocation,
        )
        .await
        .unwrap();
        let ToolOutput::Artifact(artifact) = artifact else {
            panic!("artifact expected");
        };
        assert_eq!(artifact.line_count().await.unwrap(), 2);

        let failed = tool_output(
            "s",
            "t",
            CallToolResult::error(vec![ContentBlock::text("no such city")]),
            &invocation,
        )
        .await
        .unwrap_err();
        assert!(matches!(failed, McpError::ToolFailed { ref text, .. } if text == "no such city"));

        let bad = tool_output(
            "s",
            "t",
            result(vec![ContentBlock::image("%%%", "image/png")]),
            &invocation,
        )
        .await
        .unwrap_err();
        assert!(matches!(bad, McpError::BadResult { .. }), "{bad}");
    }
}
