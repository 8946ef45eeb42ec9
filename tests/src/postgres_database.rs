//! Where the PostgreSQL tests find their database, and what they say when there is none.
//!
//! The tests read the connection string from `ADK_TEST_POSTGRES_URL` and give every test its own
//! fresh PostgreSQL schema in that database, so tests run in parallel and never see each
//! other's rows. Without the variable each PostgreSQL test passes without checking anything and
//! says so on stderr (uncaptured, so `cargo test` shows it), unless `ADK_REQUIRE_POSTGRES` is
//! set, as `.ci/postgres run` sets it: then a missing database fails the test.

use std::io::Write;
use std::sync::Once;
use std::sync::atomic::{AtomicU32, Ordering};

use adk::postgres::PostgresOptions;

/// The variable holding the test database's connection string.
pub const URL_VARIABLE: &str = "ADK_TEST_POSTGRES_URL";

/// The connection string of the test database, or `None` (after saying, once per test binary,
/// that the PostgreSQL tests did not run and how to run them).
///
/// # Panics
///
/// When `ADK_REQUIRE_POSTGRES` is set but the URL is not: a run that promised PostgreSQL must
/// not pass silently without it.
pub fn test_url() -> Option<String> {
    static NOTICE: Once = Once::new();
    match std::env::var(URL_VARIABLE) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("ADK_REQUIRE_POSTGRES").is_none(),
                "ADK_REQUIRE_POSTGRES is set but {URL_VARIABLE} is not: no database to test against"
            );
            NOTICE.call_once(|| {
                // Written to the real stderr, not through the test harness's capture, so the
                // notice shows in a passing run.
                let _ = writeln!(
                    std::io::stderr(),
                    "\nNOTE: the PostgreSQL tests did NOT run: {URL_VARIABLE} is not set.\n      \
                     Run them against a throw-away server with\n      \
                     .ci/postgres run cargo test -p adk-integration-tests --test postgres\n      \
                     or set {URL_VARIABLE}=postgresql://USER@HOST/DATABASE (see docs/postgres.md).\n"
                );
            });
            None
        }
    }
}

/// A schema name no other test (in this process or another) uses.
pub fn fresh_schema_name(label: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    format!(
        "t_{label}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Options for the test database with a fresh schema of their own, or `None` when there is no
/// test database.
///
/// # Panics
///
/// When the URL cannot be parsed, or as [`test_url`] does.
pub fn fresh_options(label: &str) -> Option<PostgresOptions> {
    let url = test_url()?;
    let options = PostgresOptions::from_url(&url)
        .unwrap_or_else(|error| panic!("{URL_VARIABLE}: {error}"))
        .schema(fresh_schema_name(label))
        .unwrap_or_else(|error| panic!("{error}"));
    Some(options)
}

/// A plain `tokio-postgres` connection to the test database whose search path is `schema`, for
/// tests that read what a store wrote.
///
/// # Panics
///
/// When the server cannot be reached or the search path cannot be set.
pub async fn schema_client(url: &str, schema: &str) -> adk::postgres::tokio_postgres::Client {
    use adk::postgres::tokio_postgres;
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|error| panic!("connecting to the test database: {error}"));
    tokio::spawn(connection);
    client
        .batch_execute(&format!("SET search_path = \"{schema}\""))
        .await
        .unwrap_or_else(|error| panic!("setting the search path to {schema}: {error}"));
    client
}
