//! Promises the compiler checks: what hosts share across tasks is `Send + Sync`, and
//! the futures they spawn are `Send`.

use app::{
    AppConfig, AppStore, AssembledCatalog, AuthToken, BuildReport, Built, CatalogAssets, GlobalMcp,
    HttpOptions, HttpServer, SessionEngine, SessionEngineFactory, SessionRequest, build,
};

fn send_sync<T: Send + Sync>() {}

fn send<T: Send>(_: &T) {}

#[test]
fn shared_types_are_send_and_sync() {
    send_sync::<Built>();
    send_sync::<SessionEngineFactory>();
    send_sync::<SessionEngine>();
    send_sync::<GlobalMcp>();
    send_sync::<CatalogAssets>();
    send_sync::<AssembledCatalog>();
    send_sync::<AppStore>();
    send_sync::<BuildReport>();
    send_sync::<HttpServer>();
    send_sync::<HttpOptions>();
    send_sync::<AuthToken>();
}

#[test]
fn host_futures_are_send() {
    send(&build(AppConfig::new("/nonexistent")));
    let factory_future = |factory: SessionEngineFactory| async move {
        let session = factory.create(SessionRequest::default()).await;
        if let Ok(session) = session {
            let _ = session.close().await;
        }
    };
    fn check<F: std::future::Future + Send>(_: &dyn Fn(SessionEngineFactory) -> F) {}
    check(&factory_future);
    let close_future = |built: std::sync::Arc<Built>| async move { built.close().await };
    fn check_close<F: std::future::Future + Send>(_: &dyn Fn(std::sync::Arc<Built>) -> F) {}
    check_close(&close_future);
    let serve_future = |server: HttpServer| server.serve(std::future::pending());
    fn check_serve<F: std::future::Future + Send>(_: &dyn Fn(HttpServer) -> F) {}
    check_serve(&serve_future);
}
