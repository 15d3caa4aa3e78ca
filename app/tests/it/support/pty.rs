//! `mecated` on a pseudo-terminal: the test types into the master side and reads
//! the screen as a terminal shows it (`vt100`), plus the raw bytes (to see the
//! restore sequences) and the slave's settings after the program exits (raw mode
//! left or not). Every wait has a deadline and wakes on output, never on a timer.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::pty::{Winsize, openpty};
use nix::sys::termios::{LocalFlags, tcgetattr};

/// How long a wait for the screen or the exit may take.
pub const PTY_WAIT: Duration = Duration::from_secs(60);

/// Rows and columns of the test terminal.
const ROWS: u16 = 50;
const COLS: u16 = 120;

/// A `mecated` process on a pseudo-terminal.
pub struct Pty {
    child: Child,
    master: File,
    slave: OwnedFd,
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    output: Receiver<()>,
}

impl Pty {
    /// Starts `mecated args…` (hermetic, with `home`) on a fresh terminal.
    pub fn spawn(home: &Path, args: &[&str]) -> Self {
        let size = Winsize {
            ws_row: ROWS,
            ws_col: COLS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = openpty(&size, None).unwrap();
        let mut command = super::hermetic_mecated(home);
        command
            .args(args)
            .env("TERM", "xterm-256color")
            .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
            .stdout(Stdio::from(pty.slave.try_clone().unwrap()))
            .stderr(Stdio::from(pty.slave.try_clone().unwrap()));
        let child = command.spawn().unwrap();
        let master = File::from(pty.master);
        let mut reader = master.try_clone().unwrap();
        let parser = Arc::new(Mutex::new(vt100::Parser::new(ROWS, COLS, 2000)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (tx, output) = channel();
        let (screen, bytes) = (Arc::clone(&parser), Arc::clone(&raw));
        // Reads until the test ends (the test keeps a slave open, so no EOF).
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                screen.lock().unwrap().process(&buf[..n]);
                bytes.lock().unwrap().extend_from_slice(&buf[..n]);
                if tx.send(()).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            master,
            slave: pty.slave,
            parser,
            raw,
            output,
        }
    }

    /// Types `text` (bytes as a terminal sends them: `\r` for Enter, `\x03` Ctrl-C).
    pub fn send(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// The screen's text, scrollback included (rows trimmed).
    pub fn screen(&self) -> String {
        let mut parser = self.parser.lock().unwrap();
        parser.screen_mut().set_scrollback(usize::MAX);
        let back = parser.screen().scrollback();
        let mut text = String::new();
        // Scrollback rows first (oldest on top), then the visible rows.
        for offset in (1..=back).rev() {
            parser.screen_mut().set_scrollback(offset);
            if let Some(row) = parser.screen().rows(0, COLS).next() {
                text.push_str(row.trim_end());
                text.push('\n');
            }
        }
        parser.screen_mut().set_scrollback(0);
        for row in parser.screen().rows(0, COLS) {
            text.push_str(row.trim_end());
            text.push('\n');
        }
        text
    }

    /// Waits until the screen shows `what` (panics with the screen at the deadline).
    pub fn wait_for(&self, what: &str) -> String {
        self.wait_until(what, |screen| screen.contains(what))
    }

    /// Waits until `condition` holds for the screen.
    pub fn wait_until(&self, what: &str, condition: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PTY_WAIT;
        loop {
            let screen = self.screen();
            if condition(&screen) {
                return screen;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(()) => {}
                Err(RecvTimeoutError::Timeout) => panic!("the screen never showed {what:?}:\n{screen}"),
                Err(RecvTimeoutError::Disconnected) => {
                    let screen = self.screen();
                    assert!(condition(&screen), "the output ended before {what:?}:\n{screen}");
                    return screen;
                }
            }
        }
    }

    /// Waits for the process to exit.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PTY_WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "mecated did not exit:\n{}", self.screen());
            // Output wakes the wait; a quiet exit is seen within the short timeout.
            let _ = self.output.recv_timeout(left.min(Duration::from_millis(50)));
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the program wrote, as bytes.
    pub fn raw(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    /// Whether the terminal is back in line mode with echo (raw mode left).
    pub fn is_cooked(&self) -> bool {
        let termios = tcgetattr(&self.slave).unwrap();
        termios
            .local_flags
            .contains(LocalFlags::ICANON | LocalFlags::ECHO)
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
