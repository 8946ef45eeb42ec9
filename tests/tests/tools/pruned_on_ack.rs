//! Ephemeral tools are pruned when the dispatch is acknowledged, and survive a nack.

use super::*;

pub(super) fn ephemeral(name: &str) -> Tool {
    Tool::builder(name)
        .description("demo")
        .ephemeral(true)
        .handler(|_, _| async { Ok("ok") })
        .build()
        .unwrap()
}

fn tool_names(tools: &ToolRegistry) -> Vec<String> {
    tools
        .all()
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect()
}

#[tokio::test]
async fn ephemeral_tools_are_pruned_when_the_dispatch_is_acked() {
    let seen = Arc::new(Mutex::new(Vec::<(Vec<String>, bool)>::new()));
    let recorder = Arc::clone(&seen);
    run_turn(
        vec![plain("kept"), ephemeral("scratch")],
        SharedStorage::new(NoopStorage::new()),
        move |ctx| {
            let recorder = Arc::clone(&recorder);
            Box::pin(async move {
                ctx.tools.register(ephemeral("forged")).unwrap();
                ctx.tools.hide(["scratch"]);
                let before = recorder.lock().unwrap().len();
                assert_eq!(before, 0);
                recorder
                    .lock()
                    .unwrap()
                    .push((tool_names(&ctx.tools), ctx.tools.is_hidden("scratch")));
                let after_ack = Arc::clone(&recorder);
                ctx.on_ack(move |ctx| {
                    after_ack
                        .lock()
                        .unwrap()
                        .push((tool_names(&ctx.tools), ctx.tools.is_hidden("scratch")));
                });
                ctx.ack()?;
                Ok(())
            })
        },
    )
    .await;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (
                vec!["kept".to_owned(), "scratch".to_owned(), "forged".to_owned()],
                true
            ),
            (vec!["kept".to_owned()], false),
        ]
    );
}

#[tokio::test]
async fn ephemeral_tools_survive_a_nack() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let recorder = Arc::clone(&seen);
    run_turn(
        vec![plain("kept"), ephemeral("scratch")],
        SharedStorage::new(NoopStorage::new()),
        move |ctx| {
            let recorder = Arc::clone(&recorder);
            Box::pin(async move {
                ctx.nack("the model refused")?;
                *recorder.lock().unwrap() = tool_names(&ctx.tools);
                Ok(())
            })
        },
    )
    .await;
    assert_eq!(*seen.lock().unwrap(), ["kept", "scratch"]);
}
