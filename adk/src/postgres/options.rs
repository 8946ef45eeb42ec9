//! [`PostgresOptions`]: where the database is, how many connections to keep, in which schema
//! the tables live and whether to speak TLS; and the pool built from them.

use std::str::FromStr;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, QueueMode, RecyclingMethod, Runtime};

use crate::storage::StorageError;

use super::error::PostgresError;

/// How many connections a pool keeps at most unless told otherwise.
pub const DEFAULT_POOL_SIZE: usize = 16;

// A caller waits this long for a free connection (or a new one to open) before the call fails
// with an error that says so, instead of hanging while the server is unreachable.
const CONNECTION_WAIT: Duration = Duration::from_secs(30);

/// How [`PostgresStorage::connect_with`](super::PostgresStorage::connect_with) reaches the
/// database.
///
/// ```
/// use adk::postgres::PostgresOptions;
///
/// let options = PostgresOptions::from_url("postgresql://agent:secret@db.internal:5432/agents")?
///     .pool_size(32)
///     .schema("support_bot")?;
/// assert_eq!(options.max_pool_size(), 32);
/// # Ok::<(), adk::postgres::PostgresError>(())
/// ```
#[derive(Clone)]
pub struct PostgresOptions {
    config: tokio_postgres::Config,
    pool_size: usize,
    schema: Option<String>,
    #[cfg(feature = "postgres-tls")]
    tls: Option<rustls::ClientConfig>,
}

impl std::fmt::Debug for PostgresOptions {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // tokio_postgres::Config's Debug already hides the password.
        let mut debug = formatter.debug_struct("PostgresOptions");
        debug
            .field("config", &self.config)
            .field("pool_size", &self.pool_size)
            .field("schema", &self.schema);
        #[cfg(feature = "postgres-tls")]
        debug.field("tls", &self.tls.is_some());
        debug.finish()
    }
}

impl PostgresOptions {
    /// Options for the database named by `url`, in either form libpq accepts:
    /// `postgresql://user:password@host:port/database?option=value` or
    /// `host=... user=... dbname=...`. A host that is a path (`?host=/run/postgresql`) is a
    /// Unix socket folder.
    ///
    /// # Errors
    ///
    /// [`PostgresError::InvalidUrl`] when the string cannot be parsed; its message shows the
    /// string with the password hidden.
    ///
    /// ```
    /// use adk::postgres::PostgresOptions;
    ///
    /// assert!(PostgresOptions::from_url("postgresql:///agents?host=/run/postgresql").is_ok());
    /// let error = PostgresOptions::from_url("postgresql://me:hunter2@db:not-a-port/x").unwrap_err();
    /// assert!(!error.to_string().contains("hunter2"));
    /// ```
    pub fn from_url(url: &str) -> Result<Self, PostgresError> {
        let config =
            tokio_postgres::Config::from_str(url).map_err(|source| PostgresError::InvalidUrl {
                url: redact_password(url),
                source,
            })?;
        Ok(Self::from_config(config))
    }

    /// Options from a driver configuration built in code.
    ///
    /// ```
    /// let mut config = tokio_postgres::Config::new();
    /// config.host("localhost").user("agent").dbname("agents");
    /// let options = adk::postgres::PostgresOptions::from_config(config);
    /// assert_eq!(options.max_pool_size(), adk::postgres::DEFAULT_POOL_SIZE);
    /// ```
    #[must_use]
    pub fn from_config(config: tokio_postgres::Config) -> Self {
        Self {
            config,
            pool_size: DEFAULT_POOL_SIZE,
            schema: None,
            #[cfg(feature = "postgres-tls")]
            tls: None,
        }
    }

    /// Keeps at most `size` connections open (at least one). Every storage call holds a
    /// connection only while its statements run, so a few connections serve many concurrent
    /// turns; the server's `max_connections` must cover the pools of every process.
    ///
    /// ```
    /// let options = adk::postgres::PostgresOptions::from_url("postgresql://localhost/agents")?
    ///     .pool_size(0);
    /// assert_eq!(options.max_pool_size(), 1);
    /// # Ok::<(), adk::postgres::PostgresError>(())
    /// ```
    #[must_use]
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// The most connections the pool keeps open.
    ///
    /// ```
    /// let options = adk::postgres::PostgresOptions::from_url("postgresql://localhost/agents")?;
    /// assert_eq!(options.max_pool_size(), 16);
    /// # Ok::<(), adk::postgres::PostgresError>(())
    /// ```
    #[must_use]
    pub fn max_pool_size(&self) -> usize {
        self.pool_size
    }

    /// Keeps adk's tables in the PostgreSQL schema `name` (created on connect if missing)
    /// instead of the connection's default `search_path`: several agents, or tests, can then
    /// share one database without seeing each other's rows.
    ///
    /// # Errors
    ///
    /// [`PostgresError::InvalidSchemaName`] unless `name` is a plain identifier (letters,
    /// digits, `_`; not starting with a digit; at most 63 bytes), so it can never smuggle SQL.
    ///
    /// ```
    /// use adk::postgres::PostgresOptions;
    ///
    /// let options = PostgresOptions::from_url("postgresql://localhost/agents")?;
    /// assert!(options.clone().schema("support_bot").is_ok());
    /// assert!(options.schema("bad\"; DROP TABLE x").is_err());
    /// # Ok::<(), adk::postgres::PostgresError>(())
    /// ```
    pub fn schema(mut self, name: impl Into<String>) -> Result<Self, PostgresError> {
        let name = name.into();
        let mut characters = name.chars();
        let plain = characters
            .next()
            .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
            && characters.all(|rest| rest.is_ascii_alphanumeric() || rest == '_')
            && name.len() <= 63;
        if !plain {
            return Err(PostgresError::InvalidSchemaName { name });
        }
        self.schema = Some(name);
        Ok(self)
    }

    /// Connects over TLS with `config` (certificates, ALPN, client authentication) instead of
    /// in plain text. Whether the server must accept TLS is the connection string's
    /// `sslmode` (`prefer` by default, `require` to refuse plain text).
    ///
    /// ```
    /// use adk::postgres::PostgresOptions;
    ///
    /// let roots = rustls::RootCertStore::empty(); // add your CA's certificate
    /// let tls = rustls::ClientConfig::builder_with_provider(
    ///     rustls::crypto::ring::default_provider().into(),
    /// )
    /// .with_safe_default_protocol_versions()
    /// .unwrap()
    /// .with_root_certificates(roots)
    /// .with_no_client_auth();
    /// let options = PostgresOptions::from_url("postgresql://db.internal/agents?sslmode=require")?
    ///     .tls(tls);
    /// # let _ = options;
    /// # Ok::<(), adk::postgres::PostgresError>(())
    /// ```
    #[cfg(feature = "postgres-tls")]
    #[must_use]
    pub fn tls(mut self, config: rustls::ClientConfig) -> Self {
        self.tls = Some(config);
        self
    }

    pub(super) fn schema_name(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    pub(super) fn build_pool(&self) -> Result<Pool, StorageError> {
        let mut config = self.config.clone();
        if let Some(schema) = &self.schema {
            // The name was checked to be a plain identifier, so quoting it is enough.
            let search_path = format!("-c search_path=\"{schema}\"");
            let options = match config.get_options() {
                Some(existing) if !existing.is_empty() => format!("{existing} {search_path}"),
                _ => search_path,
            };
            config.options(options);
        }
        let manager_config = ManagerConfig {
            // A connection handed back is reused after a cheap liveness check by the driver;
            // a broken one is replaced.
            recycling_method: RecyclingMethod::Fast,
        };
        #[cfg(feature = "postgres-tls")]
        let manager = match &self.tls {
            Some(tls) => Manager::from_config(
                config,
                tokio_postgres_rustls::MakeRustlsConnect::new(tls.clone()),
                manager_config,
            ),
            None => Manager::from_config(config, tokio_postgres::NoTls, manager_config),
        };
        #[cfg(not(feature = "postgres-tls"))]
        let manager = Manager::from_config(config, tokio_postgres::NoTls, manager_config);
        Pool::builder(manager)
            .max_size(self.pool_size)
            // The connection returned last is handed out first: the few backends a light load
            // needs stay hot and the rest sleep. Handed out oldest first (deadpool's default),
            // every call woke the backend idle longest, each in turn (the stores bench, one-flush
            // store: 1 in flight 960-990 -> 1,470-1,560 turns/s, 16 in flight 3,800-4,000 ->
            // 4,900-5,600; docs/performance.md).
            .queue_mode(QueueMode::Lifo)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CONNECTION_WAIT))
            .create_timeout(Some(CONNECTION_WAIT))
            .build()
            .map_err(|error| {
                StorageError::backend(format!("could not build the PostgreSQL pool: {error}"))
            })
    }
}

/// `url` with the password between `user:` and `@` replaced by `***`, for error messages.
fn redact_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        // Key-value form: hide a `password=...` value.
        return url
            .split_whitespace()
            .map(|pair| {
                if pair.starts_with("password=") {
                    "password=***"
                } else {
                    pair
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
    };
    let authority_start = scheme_end + 3;
    let rest = &url[authority_start..];
    let Some(at) = rest.rfind('@') else {
        return url.to_owned();
    };
    match rest[..at].find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..authority_start],
            &rest[..colon],
            &rest[at..]
        ),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_password;

    #[test]
    fn a_password_in_a_url_is_hidden_and_the_rest_kept() {
        assert_eq!(
            redact_password("postgresql://me:hunter2@db:5432/x"),
            "postgresql://me:***@db:5432/x"
        );
        assert_eq!(
            redact_password("postgresql://me@db/x"),
            "postgresql://me@db/x"
        );
        assert_eq!(
            redact_password("host=db password=hunter2 user=me"),
            "host=db password=*** user=me"
        );
    }
}
