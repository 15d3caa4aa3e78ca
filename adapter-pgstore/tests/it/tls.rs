//! TLS as the URL's `sslmode` asks: `verify-full` checks the chain and the name,
//! `verify-ca` the chain only, `require` encrypts without checking; a server
//! without TLS is refused when TLS is required.

use adapter_pgstore::{PgStore, StoreUrl};
use test_peers::PgCluster;

use crate::support::{TestDb, fast};

fn url(cluster: &PgCluster, host: &str, params: &str) -> StoreUrl {
    let raw = format!(
        "postgres://{}:{}@{host}:{}/postgres?{params}",
        test_peers::PG_USER,
        cluster.password(),
        cluster.port()
    );
    StoreUrl::parse(&raw, None).unwrap()
}

/// Whether every connection of the store is encrypted (asked of the server).
fn encrypted(cluster: &PgCluster) -> String {
    cluster.psql(
        "postgres",
        "SELECT coalesce(bool_and(s.ssl), false) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.application_name = 'mecated'",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_modes_check_what_libpq_checks() {
    let Some(cluster) = PgCluster::start_tls("tls_modes_check_what_libpq_checks") else {
        return;
    };
    let ca = cluster.ca_cert().display().to_string();
    let root = format!("sslrootcert={ca}");

    let store = PgStore::open(
        &url(&cluster, "localhost", &format!("sslmode=verify-full&{root}")),
        fast(),
    )
    .await
    .unwrap();
    assert_eq!(encrypted(&cluster), "t", "verify-full to the certificate's name");
    store.close();

    // The certificate names `localhost`, not the address.
    let error = PgStore::open(
        &url(&cluster, "127.0.0.1", &format!("sslmode=verify-full&{root}")),
        fast(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(error.contains("certificate"), "{error}");
    let store = PgStore::open(
        &url(&cluster, "127.0.0.1", &format!("sslmode=verify-ca&{root}")),
        fast(),
    )
    .await
    .unwrap();
    store.close();

    // Without our CA the chain leads nowhere trusted.
    let error = PgStore::open(
        &url(&cluster, "localhost", "sslmode=verify-full&sslrootcert=system"),
        fast(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(error.contains("certificate"), "{error}");

    // `require` encrypts and checks nothing (libpq's meaning).
    let store = PgStore::open(&url(&cluster, "127.0.0.1", "sslmode=require"), fast())
        .await
        .unwrap();
    assert_eq!(encrypted(&cluster), "t");
    store.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requiring_tls_from_a_server_without_it_is_refused() {
    let Some(db) = TestDb::new("requiring_tls_from_a_server_without_it_is_refused") else {
        return;
    };
    let raw = format!("{}?sslmode=require", db.raw_url());
    let error = PgStore::open(&StoreUrl::parse(&raw, None).unwrap(), fast())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("cannot connect"), "{error}");
    // The default (`prefer`) falls back to plaintext.
    drop(db.open().await);
}
