//! Closed value sets of v0. Each schema_version is a one-variant enum so that
//! TypeScript sees the exact string literal and JSON Schema a `const`.

use super::macros::{closed_set, literal};

literal!(
    /// The `schema_version` of a post-writeback hook registration (contract-v0).
    RegistrationSchemaVersion = "loopx_post_writeback_capability_hook_registration_v0");
literal!(
    /// The `schema_version` of a post-writeback hook input (contract-v0).
    HookInputSchemaVersion = "loopx_post_writeback_hook_input_v0");
literal!(
    /// The `schema_version` of an event projection (contract-v0).
    EventProjectionSchemaVersion = "loopx_post_writeback_event_projection_v0");
literal!(
    /// The `schema_version` of a post-writeback hook result (contract-v0).
    HookResultSchemaVersion = "loopx_post_writeback_hook_result_v0");
literal!(
    /// The `schema_version` of a post-writeback intent (contract-v0).
    IntentSchemaVersion = "loopx_post_writeback_intent_v0");
literal!(
    /// The `schema_version` of a dispatch receipt (contract-v0).
    DispatchReceiptSchemaVersion = "loopx_post_writeback_dispatch_receipt_v0");
literal!(
    /// The `schema_version` of a failure receipt (contract-v0).
    FailureReceiptSchemaVersion = "loopx_post_writeback_failure_receipt_v0");

closed_set!(
    /// The hook phase; v0 knows one.
    Phase { PostWriteback = "post_writeback" }
);
closed_set!(
    /// Core-owned event kinds (contract-v0 section 1).
    EventKind { TodoCompleted = "todo_completed", ReplanRecorded = "replan_recorded" }
);
closed_set!(
    /// Projection transition; each event kind has exactly one.
    Transition { SegmentCompleted = "segment_completed", ReplanRecorded = "replan_recorded" }
);
closed_set!(
    /// What a registration may read.
    ReadScope { SettlementIdentity = "settlement_identity", BoundedEventProjection = "bounded_event_projection" }
);
closed_set!(
    /// v0 admits only failure isolation.
    FailurePolicy { Isolate = "isolate" }
);
closed_set!(
    /// The primary step a hook input may come from.
    StepKind { DurableWriteback = "durable_writeback" }
);
closed_set!(
    /// A durable-writeback receipt's status (RFC 5.1): only `committed` is
    /// admissible; the others name what admission refuses.
    ReceiptStatus { Committed = "committed", Prepared = "prepared", Rejected = "rejected", Inferred = "inferred" }
);
closed_set!(
    /// Hook result status.
    ResultStatus { NotApplicable = "not_applicable", Proposed = "proposed" }
);
closed_set!(
    /// Status of a dispatch receipt: the first three are final, `failed` may be retried.
    DispatchStatus { Proposed = "proposed", NotApplicable = "not_applicable", Failed = "failed", Exhausted = "exhausted" }
);
closed_set!(
    /// Dispatch failure codes (RFC section 10, exactly).
    FailureCode {
        RegistrationRejected = "registration_rejected",
        InputBoundaryRejected = "input_boundary_rejected",
        ProducerFailed = "producer_failed",
        ProducerTimedOut = "producer_timed_out",
        ResultContractRejected = "result_contract_rejected",
        IntentConflict = "intent_conflict",
        DispatchBudgetExhausted = "dispatch_budget_exhausted",
    }
);

impl EventKind {
    /// The one projection transition that belongs to this event kind.
    pub fn transition(self) -> Transition {
        match self {
            EventKind::TodoCompleted => Transition::SegmentCompleted,
            EventKind::ReplanRecorded => Transition::ReplanRecorded,
        }
    }
}
