//! Storage through the invocation: a tool handler stores bytes through its invocation's storage context.

use super::*;

#[tokio::test]
async fn a_handler_stores_media_bytes_through_its_invocation() {
    let storage = Arc::new(NoopStorage::new());
    let chart = Tool::builder("chart")
        .description("Draws a chart.")
        .handler(|_, invocation: ToolInvocation| async move {
            let reader = invocation
                .store_media_bytes("chart-1", vec![0x89, b'P', b'N', b'G'])
                .await
                .map_err(ToolError::new)?;
            let media = Media::tool_generated(MediaKind::Image, "image/png", "chart.png", reader)
                .map_err(ToolError::new)?;
            Ok(media)
        })
        .build()
        .unwrap();
    let slot: Arc<Mutex<Option<Outcome>>> = Arc::default();
    let filled = Arc::clone(&slot);
    let partition: Arc<Mutex<Option<StorageContext>>> = Arc::default();
    let seen = Arc::clone(&partition);
    run_turn(
        vec![chart],
        SharedStorage::from_arc(Arc::clone(&storage)),
        move |ctx| {
            let filled = Arc::clone(&filled);
            let seen = Arc::clone(&seen);
            Box::pin(async move {
                *seen.lock().unwrap() = Some(ctx.storage_context().clone());
                let outcome = ctx.call_tool("chart", "call-1", json!({})).await;
                *filled.lock().unwrap() = Some(outcome);
                ctx.ack()?;
                Ok(())
            })
        },
    )
    .await;
    let output = slot.lock().unwrap().take().unwrap().unwrap();
    let ToolOutput::Media(media) = output else {
        panic!("expected media");
    };
    assert_eq!(media.len(), 1);
    assert_eq!(
        &media[0].reader().read_all().await.unwrap()[..],
        &[0x89, b'P', b'N', b'G']
    );
    // Kept under the turn's partition, where a fresh read by id finds it.
    let partition = partition.lock().unwrap().take().unwrap();
    let stored = storage
        .read_media_bytes(&partition, "chart-1".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        &stored.read_all().await.unwrap()[..],
        &[0x89, b'P', b'N', b'G']
    );
}
