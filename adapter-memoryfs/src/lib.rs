//! A file-backed [`MemoryStore`](engine_ports::MemoryStore): [`MemoryFs`] keeps one
//! memory scope in one directory.
//!
//! Layout: `DIR/memory.json` (the document, `{"format":"mecatl-memory/1","document":…}`),
//! `DIR/memory.lock` (the cross-process write lock) and, only while a write is under
//! way, `DIR/.memory.json.tmp-<random>`. Files are `0600`, a directory the store
//! creates `0700`. Nothing is created before the first write.
//!
//! Every write takes the lock, reads the current document, applies the change through
//! [`engine_ports::MemoryDocument`] (the caps and compare-and-set of the port
//! contract), writes a fresh temp file, `fsync`s it, renames it over `memory.json` and
//! `fsync`s the directory. So two processes on one directory never lose a write, and a
//! crash at any point leaves either the previous document or the new one whole. A
//! document that does not decode (torn, edited, another program's JSON) is reported
//! by every operation and never replaced. Reads take no lock and reuse the parsed
//! document (and its search index) while the file's identity is unchanged.

mod fsio;
mod lock;
mod store;

pub use store::{DOCUMENT_FILE, FORMAT, LOCK_FILE, MemoryFs, MemoryFsOptions, TEMP_PREFIX};
