//! [`Agent::chat`]: an interactive conversation, one turn per line, until the input ends.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use crate::ids::SessionId;
use crate::primitives::Message;

use super::Agent;

/// What [`Agent::chat_over`] writes before reading each line.
const PROMPT: &str = "> ";

impl Agent {
    /// Chats on the terminal: reads a line from stdin, runs it as a turn of conversation
    /// `session`, prints the reply on stdout, and again, until stdin ends (Ctrl-D). See
    /// [`chat_over`](Self::chat_over) for what is printed.
    ///
    /// ```no_run
    /// use adk::prelude::*;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let agent = Agent::builder("helper")
    ///     .model(ScriptedModel::new())
    ///     .storage(NoopStorage::new())
    ///     .build();
    /// agent.chat("conversation-1").await?;
    /// # Ok::<(), BoxError>(())
    /// # })?;
    /// # Ok::<(), BoxError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// When reading stdin or writing stdout fails.
    pub async fn chat(&self, session: impl Into<SessionId>) -> std::io::Result<()> {
        let input = tokio::io::BufReader::new(tokio::io::stdin());
        self.chat_over(session, input, tokio::io::stdout()).await
    }

    /// Chats over any reader and writer: writes the prompt `"> "`, reads a line, runs it as a
    /// turn of conversation `session` ([`run`](Self::run)), writes the reply and a newline, and
    /// again until the input ends. Blank lines are skipped. A turn that fails or is refused
    /// writes `error: ` and its error with every cause (`{:#}`) instead of a reply, and the chat
    /// goes on; a turn that ends without an answer (aborted) writes `(no reply)`.
    ///
    /// ```
    /// use adk::dispatch::Rule;
    /// use adk::prelude::*;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let agent = Agent::builder("helper")
    ///     .model(ScriptedModel::rules([Rule::always().reply("You said: {user}")]))
    ///     .storage(NoopStorage::new())
    ///     .build();
    /// let mut output = Vec::new();
    /// agent.chat_over("conversation-1", &b"hello\nbye\n"[..], &mut output).await?;
    /// assert_eq!(
    ///     String::from_utf8(output)?,
    ///     "> You said: hello\n> You said: bye\n> \n"
    /// );
    /// # Ok::<(), BoxError>(())
    /// # })?;
    /// # Ok::<(), BoxError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// When reading `input` or writing `output` fails.
    pub async fn chat_over<R, W>(
        &self,
        session: impl Into<SessionId>,
        mut input: R,
        mut output: W,
    ) -> std::io::Result<()>
    where
        R: AsyncBufRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let session = session.into();
        let mut line = String::new();
        loop {
            output.write_all(PROMPT.as_bytes()).await?;
            output.flush().await?;
            line.clear();
            if input.read_line(&mut line).await? == 0 {
                // The input ended: end the prompt's line so a shell's prompt starts afresh.
                output.write_all(b"\n").await?;
                output.flush().await?;
                return Ok(());
            }
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            let answer = match self.run(session.clone(), text).await {
                Ok(outcome) => match outcome.into_result() {
                    Ok(outcome) => outcome
                        .reply()
                        .and_then(Message::content)
                        .map_or_else(|| "(no reply)".to_owned(), |text| text.render()),
                    Err(error) => format!("error: {error:#}"),
                },
                Err(refused) => format!("error: {refused}"),
            };
            output.write_all(answer.as_bytes()).await?;
            output.write_all(b"\n").await?;
            output.flush().await?;
        }
    }
}
