//! Media: attachments sent to the model.

use super::*;

#[tokio::test]
async fn user_attachments_and_media_tool_results_are_sent_as_content_parts() {
    use adk::bytes::MediaReader;
    use adk::primitives::{Media, MediaKind};

    let png = Media::user_attachment(
        MediaKind::Image,
        "image/png",
        "photo.png",
        MediaReader::from_bytes(&b"\x89PNG"[..]),
    )
    .unwrap();
    let linked = Media::user_attachment(
        MediaKind::Image,
        "image/jpeg",
        "sky.jpg",
        MediaReader::detached("sky"),
    )
    .unwrap()
    .with_source("https://images.example/sky.jpg");
    let notes = Media::user_attachment(
        MediaKind::Document,
        "text/plain",
        "notes.txt",
        MediaReader::from_bytes(&b"bring an umbrella"[..]),
    )
    .unwrap();
    let question = Message::user("m-user", "What is in these?")
        .unwrap()
        .with_attachments(vec![png, linked, notes])
        .unwrap();
    let chart = Tool::typed::<ForecastArgs>("chart")
        .description("Draws tomorrow's weather.")
        .read_only()
        .handler(|_args: ForecastArgs, _invocation| async move {
            let chart = Media::tool_generated(
                MediaKind::Image,
                "image/png",
                "chart.png",
                MediaReader::from_bytes(&b"chart"[..]),
            )
            .map_err(adk::primitives::ToolError::new)?;
            Ok(adk::primitives::ToolOutput::Media(vec![chart]))
        })
        .build()
        .unwrap();
    let chart_call = vec![
        delta(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                     "function": {"name": "chart", "arguments": "{\"city\":\"Oslo\"}"}}]}),
        ),
        finish("tool_calls"),
        done(),
    ];
    let server = Server::start(vec![
        Reply::Events(chart_call),
        Reply::Events(text_answer(&["A photo, the sky, a note and a chart."])),
    ])
    .await;
    let turn = Turn {
        executor: OpenAiExecutor::new(config(&server)).unwrap(),
        question,
        tools: vec![chart],
        cancellation: CancellationToken::new(),
    };

    let run = turn.run(|_, _| {}).await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    let received = server.received();
    let messages = received[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "text", "text": "What is in these?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
            {"type": "image_url", "image_url": {"url": "https://images.example/sky.jpg"}},
            {"type": "text", "text": "notes.txt:\nbring an umbrella"},
        ]})
    );
    assert_eq!(messages[4]["role"], "tool");
    assert!(
        messages[4]["content"]
            .as_str()
            .unwrap()
            .contains("chart.png (image/png)"),
        "{}",
        messages[4]
    );
    assert_eq!(
        messages[5],
        json!({"role": "user", "content": [
            {"type": "text", "text": "Media returned by tool call c1 (chart):"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,Y2hhcnQ="}},
        ]})
    );
}

#[tokio::test]
async fn an_artifact_tool_result_is_sent_as_its_text() {
    use adk::bytes::SpoolReader;
    use adk::primitives::SpooledArtifact;

    let log = Tool::typed::<ForecastArgs>("station_log")
        .description("The weather station's log for a city.")
        .read_only()
        .handler(|args: ForecastArgs, _invocation| async move {
            let text = format!("{}: 06:00 rain\n{}: 12:00 sun", args.city, args.city);
            Ok(adk::primitives::ToolOutput::Artifact(SpooledArtifact::new(
                SpoolReader::from_bytes("log-1", text),
            )))
        })
        .build()
        .unwrap();
    let log_call = vec![
        delta(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                     "function": {"name": "station_log", "arguments": "{\"city\":\"Oslo\"}"}}]}),
        ),
        finish("tool_calls"),
        done(),
    ];
    let server = Server::start(vec![
        Reply::Events(log_call),
        Reply::Events(text_answer(&["Rain, then sun."])),
    ])
    .await;
    let mut turn = Turn::new(
        OpenAiExecutor::new(config(&server)).unwrap(),
        "What did the station log?",
    );
    turn.tools = vec![log];

    let run = turn.run(|_, _| {}).await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    let sent_back = server.received()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .map(|message| message["content"].clone())
        .unwrap();
    assert_eq!(sent_back, "Oslo: 06:00 rain\nOslo: 12:00 sun");
}
