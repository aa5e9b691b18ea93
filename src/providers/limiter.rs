//! One bound on the model requests in flight from a whole process
//! (`model.max_concurrent_requests`): the main session, every subagent of its tree and
//! every task of a batch share it, so a server with few slots is never sent more
//! requests at once than it can take. A request waits for a slot before it is sent and
//! holds it until its stream ends (or is dropped); a retry's back-off holds none, as the
//! limiter sits beneath the retries.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::stream::{self, Stream, StreamExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{ModelClient, ModelError, ModelStream, ServerFacts};
use crate::engine::model::{ModelEvent, ModelRequest};

/// The process's slots, made by the first limited client (its setting wins: every
/// session of one process reads the same settings files).
static PROCESS_SLOTS: OnceLock<Arc<Semaphore>> = OnceLock::new();

/// `model` behind the process's request limit; `model` itself when `limit` is 0.
pub fn limited(model: Arc<dyn ModelClient>, limit: usize) -> Arc<dyn ModelClient> {
    if limit == 0 {
        return model;
    }
    let slots = PROCESS_SLOTS
        .get_or_init(|| Arc::new(Semaphore::new(limit)))
        .clone();
    Arc::new(LimitedModel {
        inner: model,
        slots,
    })
}

/// A model client whose requests take a slot of a shared semaphore while in flight.
pub struct LimitedModel {
    inner: Arc<dyn ModelClient>,
    slots: Arc<Semaphore>,
}

impl LimitedModel {
    /// A client limited by `slots` of its own (tests; [`limited`] shares the process's).
    pub fn with_slots(inner: Arc<dyn ModelClient>, slots: Arc<Semaphore>) -> Self {
        Self { inner, slots }
    }
}

/// A stream that keeps its slot until it ends or is dropped.
struct Holding {
    _permit: Option<OwnedSemaphorePermit>,
    inner: ModelStream,
}

impl Stream for Holding {
    type Item = Result<ModelEvent, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.poll_next_unpin(cx);
        if let Poll::Ready(None) = polled {
            self._permit = None;
        }
        polled
    }
}

impl ModelClient for LimitedModel {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let (inner, slots) = (self.inner.clone(), self.slots.clone());
        let opened = async move {
            // Closed only if the semaphore is dropped, which the process never does.
            let permit = slots.acquire_owned().await.ok();
            Holding {
                _permit: permit,
                inner: inner.stream(request),
            }
        };
        Box::pin(stream::once(opened).flatten())
    }

    fn default_model(&self) -> BoxFuture<'static, Result<String, ModelError>> {
        self.inner.default_model()
    }

    fn discover(&self, model: &str) -> BoxFuture<'static, Result<ServerFacts, ModelError>> {
        self.inner.discover(model)
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        self.inner.list_models()
    }

    fn generate_once(
        &self,
        request: ModelRequest,
    ) -> BoxFuture<'static, Result<Vec<ModelEvent>, ModelError>> {
        let (inner, slots) = (self.inner.clone(), self.slots.clone());
        Box::pin(async move {
            let _permit = slots.acquire_owned().await.ok();
            inner.generate_once(request).await
        })
    }
}

/// `model` with one pause for everyone who shares it: once a request is answered
/// HTTP 429, no request of any sharer is sent before the time the server asked for
/// (its `Retry-After`, else a second), so a batch's tasks back off together instead of
/// each finding the limit again.
pub fn pausing_together(model: Arc<dyn ModelClient>) -> Arc<dyn ModelClient> {
    Arc::new(PausingTogether {
        inner: model,
        until: Arc::new(std::sync::Mutex::new(None)),
    })
}

/// A model client whose sharers wait out one 429's `Retry-After` together.
pub struct PausingTogether {
    inner: Arc<dyn ModelClient>,
    until: Arc<std::sync::Mutex<Option<tokio::time::Instant>>>,
}

/// When a 429 without a `Retry-After` lets requests go again.
const DEFAULT_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

impl PausingTogether {
    fn paused_until(&self) -> Option<tokio::time::Instant> {
        let until = self.until.lock().ok()?;
        until.filter(|t| *t > tokio::time::Instant::now())
    }
}

impl ModelClient for PausingTogether {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let (inner, until, wait) = (self.inner.clone(), self.until.clone(), self.paused_until());
        let opened = async move {
            if let Some(at) = wait {
                tracing::info!("waiting out a 429 of the shared model client");
                tokio::time::sleep_until(at).await;
            }
            inner.stream(request).map(move |event| {
                if let Err(ModelError::Http {
                    status: 429,
                    retry_after,
                    ..
                }) = &event
                {
                    let at = tokio::time::Instant::now() + retry_after.unwrap_or(DEFAULT_PAUSE);
                    if let Ok(mut until) = until.lock() {
                        *until = Some(until.map_or(at, |t| t.max(at)));
                    }
                }
                event
            })
        };
        Box::pin(stream::once(opened).flatten())
    }

    fn default_model(&self) -> BoxFuture<'static, Result<String, ModelError>> {
        self.inner.default_model()
    }

    fn discover(&self, model: &str) -> BoxFuture<'static, Result<ServerFacts, ModelError>> {
        self.inner.discover(model)
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        self.inner.list_models()
    }

    fn generate_once(
        &self,
        request: ModelRequest,
    ) -> BoxFuture<'static, Result<Vec<ModelEvent>, ModelError>> {
        let (inner, wait) = (self.inner.clone(), self.paused_until());
        Box::pin(async move {
            if let Some(at) = wait {
                tokio::time::sleep_until(at).await;
            }
            inner.generate_once(request).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A model whose streams stay open until released, counting how many are open.
    struct Gate {
        open: Arc<AtomicUsize>,
        peak: Arc<AtomicUsize>,
        release: Arc<Semaphore>,
    }

    impl ModelClient for Gate {
        fn provider(&self) -> &str {
            "gate"
        }
        fn stream(&self, _: ModelRequest) -> ModelStream {
            let (open, peak, release) =
                (self.open.clone(), self.peak.clone(), self.release.clone());
            Box::pin(stream::once(async move {
                let now = open.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                if let Ok(permit) = release.acquire().await {
                    permit.forget();
                }
                open.fetch_sub(1, Ordering::SeqCst);
                Ok(ModelEvent::Text("ok".into()))
            }))
        }
    }

    #[tokio::test]
    async fn no_more_requests_are_in_flight_than_the_limit() {
        let (open, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let release = Arc::new(Semaphore::new(0));
        let gate = Arc::new(Gate {
            open: open.clone(),
            peak: peak.clone(),
            release: release.clone(),
        });
        let limited = Arc::new(LimitedModel::with_slots(gate, Arc::new(Semaphore::new(2))));
        let tasks: Vec<_> = (0..6)
            .map(|_| {
                let m = limited.clone();
                tokio::spawn(async move {
                    m.stream(ModelRequest::new("m", vec![]))
                        .collect::<Vec<_>>()
                        .await
                })
            })
            .collect();
        // Two get a slot and hold it; the other four wait however often they are polled.
        while open.load(Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert_eq!(open.load(Ordering::SeqCst), 2);
        release.add_permits(6);
        for task in tasks {
            assert_eq!(task.await.unwrap().len(), 1);
        }
        assert_eq!(peak.load(Ordering::SeqCst), 2);
    }

    /// How long the throttled server asks its clients to wait.
    const RETRY_AFTER: std::time::Duration = std::time::Duration::from_millis(300);

    /// A server that answers its first request 429 (retry after [`RETRY_AFTER`]), then text;
    /// recording when each request reached it.
    struct Throttled {
        arrived: Arc<std::sync::Mutex<Vec<tokio::time::Instant>>>,
    }

    impl ModelClient for Throttled {
        fn provider(&self) -> &str {
            "throttled"
        }
        fn stream(&self, _: ModelRequest) -> ModelStream {
            let mut arrived = self.arrived.lock().unwrap();
            arrived.push(tokio::time::Instant::now());
            let event = match arrived.len() {
                1 => Err(ModelError::Http {
                    provider: "throttled".into(),
                    status: 429,
                    message: "slow down".into(),
                    retry_after: Some(RETRY_AFTER),
                }),
                _ => Ok(ModelEvent::Text("ok".into())),
            };
            Box::pin(stream::iter([event]))
        }
    }

    #[tokio::test]
    async fn after_a_429_no_sharer_sends_before_the_retry_after() {
        let arrived = Arc::new(std::sync::Mutex::new(Vec::new()));
        let model = Arc::new(PausingTogether {
            inner: Arc::new(Throttled {
                arrived: arrived.clone(),
            }),
            until: Arc::new(std::sync::Mutex::new(None)),
        });
        let first: Vec<_> = model.stream(ModelRequest::new("m", vec![])).collect().await;
        assert!(matches!(
            first[0],
            Err(ModelError::Http { status: 429, .. })
        ));
        let answered_429 = arrived.lock().unwrap()[0];
        assert!(model.paused_until().is_some(), "the 429 started no pause");
        // Two other sharers ask at once: both wait out the pause (a lower bound, which
        // a slow machine only makes longer).
        let (a, b) = {
            let (m1, m2) = (model.clone(), model.clone());
            tokio::join!(
                async move {
                    m1.stream(ModelRequest::new("m", vec![]))
                        .collect::<Vec<_>>()
                        .await
                },
                async move {
                    m2.stream(ModelRequest::new("m", vec![]))
                        .collect::<Vec<_>>()
                        .await
                },
            )
        };
        assert!(a[0].is_ok() && b[0].is_ok());
        let arrived_now = arrived.lock().unwrap().clone();
        assert_eq!(arrived_now.len(), 3);
        for at in &arrived_now[1..] {
            assert!(
                *at - answered_429 >= RETRY_AFTER,
                "a request went out {:?} after the 429",
                *at - answered_429
            );
        }
        // Once the pause is over, nothing holds a request back.
        assert_eq!(model.paused_until(), None);
        let _ = model
            .stream(ModelRequest::new("m", vec![]))
            .collect::<Vec<_>>()
            .await;
        assert_eq!(arrived.lock().unwrap().len(), 4);
    }
}
