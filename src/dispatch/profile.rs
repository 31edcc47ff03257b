//! The execution profile: whether the phase runs, which hooks, how replays
//! are treated, and per-dispatch ceilings.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

use crate::contract::Dialect;

/// Replay of an identity that already has a final receipt.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ReplayMode {
    /// Return the recorded receipt without invoking the provider.
    #[default]
    Return,
    /// Invoke the provider and compare: the same canonical result is a replay,
    /// a different one an `intent_conflict` (the original is kept).
    Verify,
}

/// The profile. Defaults: phase disabled, every hook allowed, `return`
/// replays, 16 hooks, 60 s, 64 intents and 256 KiB of results per dispatch,
/// 256 dispatches in flight. A `loopx-shipped-v0` runtime has no hook,
/// intent or result-bytes ceiling by default (each 4294967295): LoopX's
/// transport envelope bounds its dispatch instead.
#[derive(Serialize, Deserialize, TS, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[ts(export, optional_fields)]
pub struct Profile {
    pub enabled: bool,
    /// When set, only these hook_ids are invoked.
    pub allowlist: Option<Vec<String>>,
    pub replay: ReplayMode,
    pub max_hooks_per_dispatch: u32,
    pub max_dispatch_wall_ms: u32,
    /// Intents recorded across all hooks of one dispatch; a result that would
    /// pass it is deferred (the identity stays owed), like a hook past
    /// `max_hooks_per_dispatch`.
    pub max_intents_per_dispatch: u32,
    /// Canonical result bytes recorded across all hooks of one dispatch;
    /// treated like `max_intents_per_dispatch`.
    pub max_result_bytes_per_dispatch: u32,
    /// Dispatches in flight at once in this runtime; past it `dispatch` waits
    /// its turn (FIFO), or refuses when asked not to wait.
    pub max_in_flight: u32,
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            enabled: false,
            allowlist: None,
            replay: ReplayMode::Return,
            max_hooks_per_dispatch: 16,
            max_dispatch_wall_ms: 60_000,
            max_intents_per_dispatch: 64,
            max_result_bytes_per_dispatch: 262_144,
            max_in_flight: 256,
        }
    }
}

impl Profile {
    /// The defaults of a runtime speaking `dialect`: contract-v0's are
    /// [`Profile::default`]. A `loopx-shipped-v0` runtime sets no ceiling of
    /// its own on hooks, intents or result bytes per dispatch, so that it
    /// runs every batch LoopX runs: LoopX bounds a batch by its transport
    /// envelope, which the dialect applies before any provider runs
    /// (`dialect/shipped/batch.rs`).
    pub fn defaults_for(dialect: Dialect) -> Profile {
        match dialect {
            Dialect::ContractV0 => Profile::default(),
            Dialect::LoopxShippedV0 => Profile {
                max_hooks_per_dispatch: u32::MAX,
                max_intents_per_dispatch: u32::MAX,
                max_result_bytes_per_dispatch: u32::MAX,
                ..Profile::default()
            },
        }
    }

    pub fn allows(&self, hook_id: &str) -> bool {
        self.allowlist.as_ref().is_none_or(|list| list.iter().any(|h| h == hook_id))
    }
}

/// A profile as an options object gives it: the members it names, laid
/// over the defaults of the runtime's dialect once the dialect is known.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileOptions(Map<String, Value>);

impl ProfileOptions {
    /// `value` when it is a profile (known members of their types).
    pub fn read(value: Value) -> Option<Self> {
        serde_json::from_value::<Profile>(value.clone()).ok()?;
        match value {
            Value::Object(members) => Some(ProfileOptions(members)),
            _ => None,
        }
    }

    /// The profile: these members over `defaults`.
    pub fn over(&self, defaults: Profile) -> Profile {
        let Ok(Value::Object(mut all)) = serde_json::to_value(&defaults) else { return defaults };
        all.extend(self.0.clone());
        serde_json::from_value(Value::Object(all)).unwrap_or(defaults)
    }
}
