//! The plain mode (stdin not a terminal): prompts read line by line (a trailing `\`
//! continues on the next line), plain text out on stdout — the answer as it streams,
//! one line per tool call and result, the asks — and each ask answered by the next
//! input line: `y` once, `a` always, `n` deny. Scriptable and testable without a
//! terminal. An interrupt cancels the running turn (at the prompt it ends the chat);
//! a termination ends it; end of input ends it once the running turn is over.

use std::io::Write as _;
use std::sync::Arc;

use engine_core::host::SessionHost;
use engine_core::{AskAnswer, ElicitationResponse};
use engine_ports::{SessionId, StopReason, Verdict};
use futures::StreamExt as _;
use serde_json::Map;
use tokio::io::{AsyncBufReadExt as _, BufReader, Lines, Stdin};

use crate::chat::{Commands, Outcome, replay};
use crate::commands::parse;
use crate::session::ChatSession;
use crate::style::Line;
use crate::view::{Question, Shown, View};
use crate::{ChatError, ChatOptions, Resume, Signals};

/// What reading the next input gave.
enum Input {
    Line(String),
    End,
    Interrupt,
    Terminate,
}

struct Plain {
    lines: Lines<BufReader<Stdin>>,
    signals: Signals,
    /// Whether stdout is mid-line (the answer streamed without a newline yet).
    open_line: bool,
    /// Whether a termination or the end of input was seen.
    ending: bool,
}

impl Plain {
    async fn read(&mut self) -> Input {
        tokio::select! {
            line = self.lines.next_line() => match line {
                Ok(Some(line)) => Input::Line(line),
                Ok(None) => Input::End,
                Err(error) => {
                    tracing::warn!(%error, "stdin cannot be read");
                    Input::End
                }
            },
            Some(()) = self.signals.interrupt.recv() => Input::Interrupt,
            Some(()) = self.signals.terminate.recv() => Input::Terminate,
        }
    }

    /// The next prompt: lines joined while they end with `\`.
    async fn prompt(&mut self) -> Option<String> {
        let mut text = String::new();
        loop {
            match self.read().await {
                Input::Line(line) => match line.strip_suffix('\\') {
                    Some(head) => {
                        text.push_str(head);
                        text.push('\n');
                    }
                    None => {
                        text.push_str(&line);
                        return Some(text);
                    }
                },
                Input::End | Input::Interrupt | Input::Terminate => return None,
            }
        }
    }

    fn text(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.open_line = !text.ends_with('\n');
    }

    fn lines(&mut self, lines: &[Line]) {
        let mut out = std::io::stdout().lock();
        if self.open_line {
            let _ = out.write_all(b"\n");
            self.open_line = false;
        }
        for line in lines {
            let _ = writeln!(out, "{}", line.text());
        }
        let _ = out.flush();
    }

    fn say(&mut self, text: &str) {
        self.lines(&[Line::new(crate::style::Style::Plain, text)]);
    }
}

/// Runs the plain mode.
pub(crate) async fn run(
    host: Arc<dyn SessionHost>,
    options: ChatOptions,
    signals: Signals,
) -> Result<(), ChatError> {
    let resume_id = match &options.resume {
        Resume::Session(id) => Some(SessionId::from(id.clone())),
        Resume::New | Resume::Pick => None,
    };
    let (mut session, snapshot) = ChatSession::open(host, resume_id.as_ref(), options.mode)
        .await
        .map_err(ChatError::Session)?;
    let mut plain = Plain {
        lines: BufReader::new(tokio::io::stdin()).lines(),
        signals,
        open_line: false,
        ending: false,
    };
    let mut commands = Commands::default();
    if let Some(snapshot) = snapshot {
        plain.lines(&replay(&snapshot));
    }
    if options.resume == Resume::Pick {
        if let Outcome::Lines(lines) = commands.list(&session).await {
            plain.lines(&lines);
        }
        plain.say("session number to continue (empty: a new session):");
        if let Some(answer) = plain.prompt().await {
            let answer = answer.trim();
            if !answer.is_empty()
                && let Outcome::Lines(lines) = commands
                    .run(
                        &mut session,
                        crate::commands::Builtin::Resume(Some(answer.to_owned())),
                    )
                    .await
            {
                plain.lines(&lines);
            }
        }
    }
    while !plain.ending {
        let Some(input) = plain.prompt().await else {
            break;
        };
        if input.trim().is_empty() {
            continue;
        }
        if let Some(command) = parse(&input) {
            match commands.run(&mut session, command).await {
                Outcome::Lines(lines) => plain.lines(&lines),
                Outcome::Exit => break,
            }
            continue;
        }
        match session.start(&input).await {
            Ok(run) => follow(&mut plain, &mut session, run).await,
            Err(error) => plain.say(&format!("error: {error}")),
        }
    }
    session.close().await;
    Ok(())
}

/// Shows a run to its end, answering its asks from the input.
async fn follow(plain: &mut Plain, session: &mut ChatSession, mut run: engine_core::Run) {
    let mut view = View::default();
    loop {
        let event = tokio::select! {
            event = run.next() => event,
            Some(()) = plain.signals.interrupt.recv() => {
                run.cancel();
                continue;
            }
            Some(()) = plain.signals.terminate.recv() => {
                plain.ending = true;
                run.cancel();
                continue;
            }
        };
        let Some(event) = event else { break };
        match view.event(&event) {
            None => {}
            Some(Shown::Text(text)) => plain.text(&text),
            Some(Shown::Lines(lines)) => plain.lines(&lines),
            Some(Shown::Ask(ask)) => {
                plain.lines(&ask.lines);
                let verdict = ask_verdict(plain, &mut run).await;
                if !session.approve(&ask.ask_id, verdict) {
                    plain.say("  (the ask was already closed)");
                }
            }
            Some(Shown::Question(question)) => {
                let response = answer_question(plain, &question).await;
                if let Some(response) = response
                    && let Err(error) = session.answer(&question.elicitation_id, response)
                {
                    plain.say(&format!("  the answer was not taken: {error}"));
                }
            }
            Some(Shown::End { stop, error, usage }) => {
                if stop != StopReason::EndTurn {
                    let detail = error.map(|e| format!(": {e}")).unwrap_or_default();
                    plain.say(&format!("[stopped: {}{detail}]", stop.as_str()));
                } else if plain.open_line {
                    plain.lines(&[]);
                }
                session.finished(usage);
            }
        }
    }
}

/// Reads `y`, `a` or `n` (asking again for anything else); `n` may be followed by a
/// reason for the model (`n use notes.md instead`). The end of input, an interrupt
/// or a termination deny (and the last two cancel the run).
async fn ask_verdict(plain: &mut Plain, run: &mut engine_core::Run) -> AskAnswer {
    loop {
        plain.say("  allow? y = yes once, a = always (this tool, this session), n [why] = no");
        match plain.read().await {
            Input::Line(line) => {
                if let Some(answer) = parse_verdict(&line) {
                    return answer;
                }
            }
            Input::End => {
                plain.ending = true;
                return Verdict::Deny.into();
            }
            Input::Interrupt => {
                run.cancel();
                return Verdict::Deny.into();
            }
            Input::Terminate => {
                plain.ending = true;
                run.cancel();
                return Verdict::Deny.into();
            }
        }
    }
}

/// `y`, `a`, `n` (or `yes`, `always`, `no`), the denial with the rest of the line as
/// its reason; `None` for anything else.
fn parse_verdict(line: &str) -> Option<AskAnswer> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    match word.trim_end_matches([',', ':']) {
        "y" | "yes" if rest.is_empty() => Some(Verdict::AllowOnce.into()),
        "a" | "always" if rest.is_empty() => Some(Verdict::AllowAlways.into()),
        "n" | "no" => Some(AskAnswer::deny_because(rest)),
        _ => None,
    }
}

/// Asks a form field by field; `/decline` or `/cancel` on any field answers so.
/// `None` when the run is being stopped (the engine ends the question itself).
async fn answer_question(plain: &mut Plain, question: &Question) -> Option<ElicitationResponse> {
    plain.lines(&question.lines);
    plain.say("  (answer each field; /decline or /cancel to refuse)");
    let mut content = Map::new();
    for field in &question.fields {
        loop {
            plain.say(&format!("  {}:", field.prompt()));
            let line = match plain.read().await {
                Input::Line(line) => line,
                Input::End | Input::Terminate => {
                    plain.ending = true;
                    return Some(ElicitationResponse::cancel());
                }
                Input::Interrupt => return Some(ElicitationResponse::cancel()),
            };
            match line.trim() {
                "/decline" => return Some(ElicitationResponse::decline()),
                "/cancel" => return Some(ElicitationResponse::cancel()),
                "" if !field.required => break,
                answer => match field.parse(answer) {
                    Ok(value) => {
                        content.insert(field.name.clone(), value);
                        break;
                    }
                    Err(expected) => plain.say(&format!("  {expected}")),
                },
            }
        }
    }
    Some(ElicitationResponse::accept(content))
}

#[cfg(test)]
mod tests {
    use engine_core::AskAnswer;
    use engine_ports::Verdict;

    use super::parse_verdict;

    #[test]
    fn a_plain_no_may_carry_the_reason_for_the_model_on_the_same_line() {
        assert_eq!(parse_verdict(" y "), Some(Verdict::AllowOnce.into()));
        assert_eq!(parse_verdict("always"), Some(Verdict::AllowAlways.into()));
        assert_eq!(parse_verdict("n"), Some(Verdict::Deny.into()));
        assert_eq!(
            parse_verdict("no, write notes.md instead"),
            Some(AskAnswer::deny_because("write notes.md instead"))
        );
        assert_eq!(
            parse_verdict("n   the tests run in CI"),
            Some(AskAnswer::deny_because("the tests run in CI"))
        );
        assert_eq!(
            parse_verdict("yes please"),
            None,
            "only a denial takes words after it"
        );
        assert_eq!(parse_verdict("nope"), None);
        assert_eq!(parse_verdict(""), None);
    }
}
