//! The interactive mode: one event loop over the terminal's keys, the running turn's
//! events and the host's signals. At the prompt the keys edit the input (Enter sends,
//! Alt-Enter or a trailing `\` adds a line, Up/Down walk the history, Tab completes
//! a `/command`, Shift-Tab cycles the mode, Ctrl-C clears or — at an empty prompt,
//! twice — leaves, Ctrl-D leaves); while a turn runs, Ctrl-C or Esc stops it (Esc to
//! type a correction), other keys type ahead into the next prompt, an ask is answered
//! with one key (`y` once, `a` always, `n` no), a tool's question field by field.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event as TermEvent, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use engine_core::host::SessionHost;
use engine_core::{AskAnswer, ElicitationResponse, Run};
use engine_ports::{CommandInfo, Event, SessionId, StopReason, Verdict};
use futures::StreamExt as _;
use serde_json::Map;

use crate::chat::{Commands, Outcome, replay};
use crate::commands::{Builtin, common_prefix, completions, next_mode, parse};
use crate::editor::Editor;
use crate::history::History;
use crate::session::ChatSession;
use crate::style::{Line, Style, printable};
use crate::term::{Prompt, Term};
use crate::view::{Ask, Question, Shown, View};
use crate::{ChatError, ChatOptions, Resume, Signals};

/// How long a terminated chat waits for its cancelled turn to save and end.
const END_GRACE: Duration = Duration::from_secs(10);

/// Most completions listed under the input.
const MAX_COMPLETIONS: usize = 8;

/// Whether the loop goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Go,
    Exit,
}

/// What waits for the person during a turn.
enum Pending {
    Ask(Ask),
    /// A denied ask (its id): the person may type what the model should know.
    Reason(String),
    /// The form, the answers so far, and how many fields were asked (skipped
    /// optional ones included).
    Question(Question, Map<String, serde_json::Value>, usize),
}

/// A turn in progress.
struct Running {
    run: Run,
    view: View,
    pending: VecDeque<Pending>,
    /// Whether Esc stopped it (the person types a correction next).
    escaped: bool,
}

struct Ui {
    term: Term,
    session: ChatSession,
    commands: Commands,
    editor: Editor,
    history: History,
    palette: Vec<CommandInfo>,
    running: Option<Running>,
    /// Completions listed under the input until the next key.
    listed: Vec<(String, String)>,
    /// Ctrl-C at an empty prompt once: a second one leaves.
    armed: bool,
    /// The next input picks a past session (`--resume` without an id).
    picking: bool,
}

/// Runs the interactive mode.
pub(crate) async fn run(
    host: Arc<dyn SessionHost>,
    options: ChatOptions,
    mut signals: Signals,
) -> Result<(), ChatError> {
    let resume_id = match &options.resume {
        Resume::Session(id) => Some(SessionId::from(id.clone())),
        Resume::New | Resume::Pick => None,
    };
    let (session, snapshot) = ChatSession::open(Arc::clone(&host), resume_id.as_ref(), options.mode)
        .await
        .map_err(ChatError::Session)?;
    let mut notes = Vec::new();
    let history = History::load(options.history.as_deref()).unwrap_or_else(|error| {
        notes.push(Line::new(
            Style::Bad,
            format!("the prompt history is not kept: {error}"),
        ));
        History::default()
    });
    let palette = match host.commands().list().await {
        Ok(palette) => palette,
        Err(error) => {
            notes.push(Line::new(
                Style::Bad,
                format!("the command palette cannot be listed: {error}"),
            ));
            Vec::new()
        }
    };
    let term = match Term::enter() {
        Ok(term) => term,
        Err(error) => {
            session.close().await;
            return Err(ChatError::Terminal(error));
        }
    };
    let mut ui = Ui {
        term,
        session,
        commands: Commands::default(),
        editor: Editor::default(),
        history,
        palette,
        running: None,
        listed: Vec::new(),
        armed: false,
        picking: false,
    };
    ui.term.lines(&[Line::new(Style::Accent, "mecated chat").push(
        Style::Dim,
        format!(
            " · {} · {} · /help for commands, Ctrl-D to leave",
            ui.session.model(),
            host.workspace_root().display()
        ),
    )]);
    ui.term.lines(&notes);
    if let Some(snapshot) = snapshot {
        ui.term.lines(&replay(&snapshot));
        ui.term.lines(&[Line::new(
            Style::Dim,
            format!("continuing session {}", ui.session.id().as_str()),
        )]);
    }
    if options.resume == Resume::Pick {
        if let Outcome::Lines(lines) = ui.commands.list(&ui.session).await {
            ui.term.lines(&lines);
        }
        ui.picking = true;
    }
    let mut keys = EventStream::new();
    let result = ui.main(&mut keys, &mut signals).await;
    let Ui { term, session, .. } = ui;
    term.leave();
    session.close().await;
    result
}

/// The next event of the running turn; never resolves without one.
async fn next_event(running: &mut Option<Running>) -> Option<Event> {
    match running {
        Some(running) => running.run.next().await,
        None => std::future::pending().await,
    }
}

impl Ui {
    async fn main(&mut self, keys: &mut EventStream, signals: &mut Signals) -> Result<(), ChatError> {
        loop {
            self.draw();
            tokio::select! {
                key = keys.next() => match key {
                    Some(Ok(event)) => {
                        if self.on_terminal(event).await == Flow::Exit {
                            break;
                        }
                    }
                    Some(Err(error)) => {
                        self.end_turn().await;
                        return Err(ChatError::Terminal(error));
                    }
                    None => break,
                },
                event = next_event(&mut self.running) => self.on_event(event).await,
                Some(()) = signals.interrupt.recv() => {
                    if self.interrupt(false) == Flow::Exit {
                        break;
                    }
                }
                Some(()) = signals.terminate.recv() => break,
            }
        }
        self.end_turn().await;
        Ok(())
    }

    /// Cancels a running turn and follows it to its end (bounded), so it is saved.
    async fn end_turn(&mut self) {
        if let Some(running) = &self.running {
            running.run.cancel();
        }
        let drained = tokio::time::timeout(END_GRACE, async {
            while self.running.is_some() {
                let event = next_event(&mut self.running).await;
                self.on_event(event).await;
            }
        })
        .await;
        if drained.is_err() {
            self.running = None;
        }
    }

    /// Draws the input area for what waits for the person, if anything.
    fn draw(&mut self) {
        let status = self.status();
        match self.running.as_ref().and_then(|r| r.pending.front()) {
            Some(Pending::Ask(_)) => self.term.prompt(&Prompt {
                marker: "allow? [y] yes, once · [a] always (this tool, this session) · [n] no ",
                lines: (vec![""], (0, 0)),
                below: Vec::new(),
            }),
            Some(Pending::Reason(_)) => self.term.prompt(&Prompt {
                marker: "why not? › ",
                lines: self.editor.lines(),
                below: vec![Line::new(
                    Style::Dim,
                    "Enter tells the model (empty: no reason) · Esc stops the run",
                )],
            }),
            Some(Pending::Question(question, _, asked)) => {
                let field = question.fields.get(*asked).map(crate::view::Field::prompt);
                let marker = format!("{} › ", field.unwrap_or_default());
                self.term.prompt(&Prompt {
                    marker: &marker,
                    lines: self.editor.lines(),
                    below: vec![Line::new(Style::Dim, "Enter answers · Esc declines")],
                });
            }
            None if self.running.is_some() => {}
            None => {
                let mut below = vec![status];
                below.extend(self.listed.iter().take(MAX_COMPLETIONS).map(|(name, help)| {
                    match help.strip_prefix('/') {
                        // The chat's own commands: their help names them already.
                        Some(_) => Line::new(Style::Dim, format!("  {help}")),
                        None => Line::new(Style::Dim, format!("  /{name}  {help}")),
                    }
                }));
                let marker = if self.picking { "pick › " } else { "› " };
                self.term.prompt(&Prompt {
                    marker,
                    lines: self.editor.lines(),
                    below,
                });
            }
        }
    }

    fn status(&self) -> Line {
        let hint = if self.armed {
            "Ctrl-C again to leave".to_owned()
        } else if self.picking {
            "a number from the list, or Enter for a new session".to_owned()
        } else {
            "Enter sends · Alt-Enter new line · Shift-Tab mode · /help".to_owned()
        };
        Line::new(
            Style::Dim,
            format!(
                "  mode {} · {} · {hint}",
                self.session.mode().as_str(),
                self.session.model()
            ),
        )
    }

    async fn on_terminal(&mut self, event: TermEvent) -> Flow {
        match event {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key).await,
            TermEvent::Paste(text) => {
                if self.typing() {
                    self.editor
                        .insert(&text.replace("\r\n", "\n").replace('\r', "\n"));
                }
                Flow::Go
            }
            _ => Flow::Go,
        }
    }

    /// Whether keys go to the editor now (the prompt, or a question's field).
    fn typing(&self) -> bool {
        match &self.running {
            None => true,
            Some(running) => matches!(
                running.pending.front(),
                Some(Pending::Question(..) | Pending::Reason(_))
            ),
        }
    }

    async fn on_key(&mut self, key: KeyEvent) -> Flow {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.interrupt(false);
        }
        if key.code != KeyCode::Tab {
            self.listed.clear();
        }
        let Some(running) = &mut self.running else {
            return self.on_prompt_key(key, ctrl).await;
        };
        match running.pending.front() {
            Some(Pending::Ask(_)) => {
                let verdict = match key.code {
                    KeyCode::Char('y' | 'Y') => Verdict::AllowOnce,
                    KeyCode::Char('a' | 'A') => Verdict::AllowAlways,
                    KeyCode::Char('n' | 'N') => Verdict::Deny,
                    KeyCode::Esc => return self.interrupt(true),
                    _ => return Flow::Go,
                };
                if let Some(Pending::Ask(ask)) = running.pending.pop_front() {
                    if verdict == Verdict::Deny {
                        // The denial is sent with the reason typed next (or none).
                        running.pending.push_front(Pending::Reason(ask.ask_id));
                        return Flow::Go;
                    }
                    let said = match verdict {
                        Verdict::AllowOnce => "  → yes, once",
                        Verdict::AllowAlways => "  → yes, always for this tool in this session",
                        Verdict::Deny => "  → no",
                    };
                    self.term.lines(&[Line::new(Style::Dim, said)]);
                    if !self.session.approve(&ask.ask_id, verdict) {
                        self.term
                            .lines(&[Line::new(Style::Dim, "  (the ask was already closed)")]);
                    }
                }
                Flow::Go
            }
            Some(Pending::Reason(_)) => {
                match key.code {
                    KeyCode::Esc => return self.interrupt(true),
                    KeyCode::Enter if !key.modifiers.contains(KeyModifiers::ALT) => self.deny_with_reason(),
                    _ => edit(&mut self.editor, key, ctrl, &[]),
                }
                Flow::Go
            }
            Some(Pending::Question(..)) => {
                match key.code {
                    KeyCode::Esc => self.answer_question(Some(ElicitationResponse::decline())),
                    KeyCode::Enter if !key.modifiers.contains(KeyModifiers::ALT) => self.answer_field(),
                    _ => edit(&mut self.editor, key, ctrl, &[]),
                }
                Flow::Go
            }
            None => {
                // Typed ahead while the turn runs: kept in the input for the next prompt.
                match key.code {
                    KeyCode::Esc => return self.interrupt(true),
                    KeyCode::Enter | KeyCode::Tab | KeyCode::BackTab => {}
                    KeyCode::Char('d') if ctrl => {}
                    _ => edit(&mut self.editor, key, ctrl, self.history.entries()),
                }
                Flow::Go
            }
        }
    }

    async fn on_prompt_key(&mut self, key: KeyEvent, ctrl: bool) -> Flow {
        if !(ctrl && key.code == KeyCode::Char('c')) {
            self.armed = false;
        }
        match key.code {
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() {
                    return Flow::Exit;
                }
                self.editor.delete();
            }
            KeyCode::Enter if key.modifiers.contains(KeyModifiers::ALT) => self.editor.insert("\n"),
            KeyCode::Enter => {
                if self.editor.enter() {
                    let text = self.editor.take();
                    return self.submit(text).await;
                }
            }
            KeyCode::BackTab => {
                let mode = next_mode(self.session.mode());
                if let Err(error) = self.session.set_mode(mode).await {
                    self.term.lines(&[Line::new(Style::Bad, error)]);
                }
            }
            KeyCode::Tab => self.complete(),
            KeyCode::Esc => {}
            _ => edit(&mut self.editor, key, ctrl, self.history.entries()),
        }
        Flow::Go
    }

    /// Ctrl-C (or Esc, `escaped`): stops a running turn; at the prompt it clears the
    /// input, and at an empty prompt a second one leaves.
    fn interrupt(&mut self, escaped: bool) -> Flow {
        if let Some(running) = &mut self.running {
            running.escaped |= escaped;
            running.run.cancel();
            return Flow::Go;
        }
        if !self.editor.is_empty() {
            self.editor.take();
            self.armed = false;
            return Flow::Go;
        }
        if self.armed {
            return Flow::Exit;
        }
        self.armed = true;
        Flow::Go
    }

    fn complete(&mut self) {
        if self.editor.before_cursor() != self.editor.text() {
            return;
        }
        let found = completions(self.editor.text(), &self.palette);
        match found.as_slice() {
            [] => {}
            [(name, _)] => self.editor.set(&format!("/{name} ")),
            many => {
                let names: Vec<&str> = many.iter().map(|(name, _)| name.as_str()).collect();
                self.editor.set(&format!("/{}", common_prefix(&names)));
                self.listed = found;
            }
        }
    }

    /// A complete input: a pick, a chat command, or a prompt for the engine.
    async fn submit(&mut self, text: String) -> Flow {
        let echo: Vec<Line> = text
            .split('\n')
            .enumerate()
            .map(|(n, line)| {
                let mark = if n == 0 { "› " } else { "  " };
                Line::new(Style::Accent, mark).push(Style::Bold, crate::style::printable(line))
            })
            .collect();
        self.term.lines(&echo);
        if self.picking {
            self.picking = false;
            let pick = text.trim();
            if !pick.is_empty()
                && let Outcome::Lines(lines) = self
                    .commands
                    .run(&mut self.session, Builtin::Resume(Some(pick.to_owned())))
                    .await
            {
                self.term.lines(&lines);
            }
            return Flow::Go;
        }
        if text.trim().is_empty() {
            return Flow::Go;
        }
        if let Err(error) = self.history.add(&text) {
            self.term.lines(&[Line::new(
                Style::Bad,
                format!("the prompt history is not kept: {error}"),
            )]);
        }
        if let Some(command) = parse(&text) {
            return match self.commands.run(&mut self.session, command).await {
                Outcome::Lines(lines) => {
                    self.term.lines(&lines);
                    Flow::Go
                }
                Outcome::Exit => Flow::Exit,
            };
        }
        match self.session.start(&text).await {
            Ok(run) => {
                self.running = Some(Running {
                    run,
                    view: View::default(),
                    pending: VecDeque::new(),
                    escaped: false,
                });
            }
            Err(error) => self
                .term
                .lines(&[Line::new(Style::Bad, format!("error: {error}"))]),
        }
        Flow::Go
    }

    async fn on_event(&mut self, event: Option<Event>) {
        let Some(running) = &mut self.running else {
            return;
        };
        let Some(event) = event else {
            self.running = None;
            return;
        };
        match running.view.event(&event) {
            None => {}
            Some(Shown::Text(text)) => self.term.text(&text),
            Some(Shown::Lines(lines)) => self.term.lines(&lines),
            Some(Shown::Ask(ask)) => {
                self.term.lines(&ask.lines);
                running.pending.push_back(Pending::Ask(ask));
            }
            Some(Shown::Question(question)) => {
                self.term.lines(&question.lines);
                if question.fields.is_empty() {
                    let answer = self
                        .session
                        .answer(&question.elicitation_id, ElicitationResponse::accept(Map::new()));
                    if let Err(error) = answer {
                        self.term.lines(&[Line::new(Style::Bad, format!("  {error}"))]);
                    }
                } else {
                    running
                        .pending
                        .push_back(Pending::Question(question, Map::new(), 0));
                }
            }
            Some(Shown::End { stop, error, usage }) => {
                let escaped = running.escaped;
                running.pending.clear();
                self.term.end_text();
                let line = match stop {
                    StopReason::EndTurn => None,
                    StopReason::Cancelled if escaped => Some(Line::new(
                        Style::Dim,
                        "⏹ interrupted — type a correction, or Up for the last prompt",
                    )),
                    StopReason::Cancelled => Some(Line::new(Style::Dim, "⏹ interrupted")),
                    StopReason::MaxTokens => Some(Line::new(
                        Style::Bad,
                        "[stopped: max_tokens: the answer was cut off by the output limit]",
                    )),
                    other => {
                        let detail = error.map(|e| format!(": {e}")).unwrap_or_default();
                        Some(Line::new(
                            Style::Bad,
                            format!("[stopped: {}{detail}]", other.as_str()),
                        ))
                    }
                };
                self.term.lines(&line.into_iter().collect::<Vec<_>>());
                self.session.finished(usage);
                // The result is the run's last word (saved, lease released): the
                // prompt is back now, so an Enter typed right after it is not lost.
                self.running = None;
            }
        }
    }

    /// Enter on a question's field: keeps a valid answer and asks the next field,
    /// or answers the form once every field is in.
    /// Sends the denial of the ask waiting for its reason, with what was typed.
    fn deny_with_reason(&mut self) {
        let Some(running) = &mut self.running else {
            return;
        };
        let Some(Pending::Reason(ask_id)) = running.pending.pop_front() else {
            return;
        };
        let typed = self.editor.take();
        let answer = AskAnswer::deny_because(&typed);
        let said = match &answer.reason {
            Some(reason) => Line::new(Style::Dim, "  → no: ").push(Style::Plain, printable(reason)),
            None => Line::new(Style::Dim, "  → no"),
        };
        self.term.lines(&[said]);
        if !self.session.approve(&ask_id, answer) {
            self.term
                .lines(&[Line::new(Style::Dim, "  (the ask was already closed)")]);
        }
    }

    fn answer_field(&mut self) {
        let Some(Running { pending, .. }) = &mut self.running else {
            return;
        };
        let Some(Pending::Question(question, content, asked)) = pending.front_mut() else {
            return;
        };
        let Some(field) = question.fields.get(*asked).cloned() else {
            return;
        };
        let typed = self.editor.take();
        let field_line =
            Line::new(Style::Dim, format!("  {}: ", field.name)).push(Style::Plain, typed.clone());
        if !typed.trim().is_empty() || field.required {
            match field.parse(&typed) {
                Ok(value) => {
                    content.insert(field.name.clone(), value);
                }
                Err(expected) => {
                    self.term.lines(&[Line::new(Style::Bad, format!("  {expected}"))]);
                    return;
                }
            }
        }
        *asked += 1;
        self.term.lines(&[field_line]);
        if *asked == question.fields.len() {
            let answered = std::mem::take(content);
            self.answer_question(Some(ElicitationResponse::accept(answered)));
        }
    }

    /// Answers the question in front and takes it off the queue.
    fn answer_question(&mut self, response: Option<ElicitationResponse>) {
        let Some(running) = &mut self.running else {
            return;
        };
        let Some(Pending::Question(question, ..)) = running.pending.pop_front() else {
            return;
        };
        self.editor.take();
        if let Some(response) = response
            && let Err(error) = self.session.answer(&question.elicitation_id, response)
        {
            self.term.lines(&[Line::new(
                Style::Bad,
                format!("  the answer was not taken: {error}"),
            )]);
        }
    }
}

/// The editing keys shared by the prompt and a question's field.
fn edit(editor: &mut Editor, key: KeyEvent, ctrl: bool, history: &[String]) {
    match key.code {
        KeyCode::Char('a') if ctrl => editor.home(),
        KeyCode::Char('e') if ctrl => editor.end(),
        KeyCode::Char('u') if ctrl => {
            editor.take();
        }
        KeyCode::Char('w') if ctrl => editor.delete_word(),
        KeyCode::Char(_) if ctrl => {}
        KeyCode::Char(c) => {
            let mut buf = [0u8; 4];
            editor.insert(c.encode_utf8(&mut buf));
        }
        KeyCode::Enter => editor.insert("\n"),
        KeyCode::Backspace => editor.backspace(),
        KeyCode::Delete => editor.delete(),
        KeyCode::Left => editor.left(),
        KeyCode::Right => editor.right(),
        KeyCode::Home => editor.home(),
        KeyCode::End => editor.end(),
        KeyCode::Up => editor.up(history),
        KeyCode::Down => editor.down(history),
        _ => {}
    }
}
