//! The schema: versioned SQL embedded in the binary, applied at startup.
//!
//! `mecated_schema_version` holds one row per applied version. Opening a store takes
//! a transaction-level advisory lock (so replicas starting together migrate once),
//! applies every version above the highest recorded one in that same transaction
//! (DDL is transactional in PostgreSQL: a failed migration leaves nothing behind),
//! and refuses a database whose recorded version is newer than [`MIGRATIONS`] knows:
//! an older binary must not write a schema it does not understand.
//!
//! A new port's tables (or any change) are a new file `NNNN_name.sql` and a new entry
//! at the end of [`MIGRATIONS`]; applied files are never edited.

use deadpool_postgres::Object;

use crate::db::describe;

/// Every migration, in version order (version = index + 1).
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "initial",
        sql: include_str!("../migrations/0001_initial.sql"),
    },
    Migration {
        version: 2,
        name: "memory",
        sql: include_str!("../migrations/0002_memory.sql"),
    },
];

/// One embedded schema step.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    /// Its version (1, 2, …).
    pub version: i32,
    /// A short name.
    pub name: &'static str,
    /// The SQL it runs.
    pub sql: &'static str,
}

/// The schema version this binary writes.
pub fn current_version() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// The advisory lock serialising migrations of one database (any fixed number;
/// this one spells "mecated" in ASCII).
const MIGRATION_LOCK: i64 = 0x006d_6563_6174_6564;

/// Brings the schema to [`current_version`]; returns the version found before.
///
/// # Errors
/// The database's version is newer than this binary's, or a statement failed.
pub(crate) async fn migrate(client: &mut Object) -> Result<i32, String> {
    let transaction = client
        .transaction()
        .await
        .map_err(|e| format!("starting the schema migration failed: {}", describe(&e)))?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(|e| {
            format!(
                "waiting for another process's schema migration failed: {}",
                describe(&e)
            )
        })?;
    transaction
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS mecated_schema_version (
                version    integer PRIMARY KEY,
                name       text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
            )",
        )
        .await
        .map_err(|e| format!("creating mecated_schema_version failed: {}", describe(&e)))?;
    let row = transaction
        .query_one(
            "SELECT coalesce(max(version), 0) FROM mecated_schema_version",
            &[],
        )
        .await
        .map_err(|e| format!("reading the schema version failed: {}", describe(&e)))?;
    let found: i32 = row.get(0);
    let known = current_version();
    if found > known {
        return Err(format!(
            "the database schema is at version {found}, newer than this mecated knows ({known}); \
             upgrade mecated (it never writes a schema it does not know)"
        ));
    }
    for migration in MIGRATIONS.iter().filter(|m| m.version > found) {
        transaction.batch_execute(migration.sql).await.map_err(|e| {
            format!(
                "schema migration {} ({}) failed: {}",
                migration.version,
                migration.name,
                describe(&e)
            )
        })?;
        transaction
            .execute(
                "INSERT INTO mecated_schema_version (version, name) VALUES ($1, $2)",
                &[&migration.version, &migration.name],
            )
            .await
            .map_err(|e| {
                format!(
                    "recording schema version {} failed: {}",
                    migration.version,
                    describe(&e)
                )
            })?;
    }
    transaction
        .commit()
        .await
        .map_err(|e| format!("committing the schema migration failed: {}", describe(&e)))?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_count_up_from_one() {
        for (i, migration) in MIGRATIONS.iter().enumerate() {
            assert_eq!(migration.version, i as i32 + 1, "{}", migration.name);
            assert!(!migration.sql.trim().is_empty(), "{}", migration.name);
        }
        assert_eq!(current_version(), MIGRATIONS.len() as i32);
    }
}
