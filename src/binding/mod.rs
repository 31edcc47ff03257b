//! The only `#[napi]` code: converts JS values to core inputs and core
//! outputs to JS values, and forwards. No acceptance rule lives here.

mod context;
mod dispatch;
mod error;
mod identities;
mod inbox;
mod journal;
mod js_provider;
mod js_value;
mod plan;
mod runtime;
mod sidecar;
mod sqlite_probe;
mod transaction;
mod turn_start;
mod turn_start_session;
mod turn_start_shipped;
mod validators;

/// The addon's own allocations (documents, ids, rows, outcome texts: many
/// small, short-lived ones per dispatch, freed on another thread as often as
/// not) go to mimalloc instead of glibc's malloc; Node's are untouched. Its
/// thread-local state uses the local-dynamic TLS model because the addon is
/// `dlopen`ed, where the static TLS block may have no room left.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
