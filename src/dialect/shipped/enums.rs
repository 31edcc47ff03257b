//! The closed value sets of the shipped dialect. Schema-version literals
//! carry the `Shipped` prefix in Rust too (nothing else names them); the
//! sets the API names plainly are exported to TypeScript with the prefix.

use super::macros::shipped_set;
use crate::contract::macros::literal;

literal!(
    /// The `schema_version` of a loopx-shipped-v0 hook registration.
    ShippedRegistrationSchemaVersion = "loopx_post_writeback_capability_hook_registration_v0");
literal!(
    /// The `schema_version` of a loopx-shipped-v0 hook source.
    ShippedSourceSchemaVersion = "loopx_post_writeback_hook_source_v0");
literal!(
    /// The `schema_version` of a loopx-shipped-v0 hook input.
    ShippedHookInputSchemaVersion = "loopx_post_writeback_capability_hook_input_v0");
literal!(
    /// The `schema_version` of a loopx-shipped-v0 hook result.
    ShippedHookResultSchemaVersion = "loopx_post_writeback_capability_hook_result_v0");
literal!(
    /// The `schema_version` of a loopx-shipped-v0 capability intent.
    ShippedIntentSchemaVersion = "loopx_capability_intent_v0");
literal!(
    /// The `schema_version` of a loopx-shipped-v0 sidecar receipt.
    ShippedSidecarReceiptSchemaVersion = "loopx_post_writeback_capability_hook_receipt_v0");
literal!(
    /// The `schema_version` of a loopx-shipped-v0 dispatch result.
    ShippedDispatchSchemaVersion = "loopx_post_writeback_capability_hook_dispatch_v0");
literal!(
    /// The `schema_version` of a loopx-shipped-v0 runtime failure.
    ShippedRuntimeFailureSchemaVersion = "loopx_post_writeback_runtime_failure_v0");

shipped_set!(
    /// A durable writeback's status, as LoopX's input boundary admits it.
    SourceStatus as "ShippedSourceStatus" {
        Committed = "committed",
        Appended = "appended",
        ReceiptRepaired = "receipt_repaired",
    }
);
shipped_set!(
    /// A hook result's status: `intent` carries exactly one intent.
    ResultStatus as "ShippedResultStatus" { NotApplicable = "not_applicable", Intent = "intent" }
);
shipped_set!(
    /// A sidecar receipt's status: the first two are terminal, the third is retried.
    SidecarStatus as "ShippedSidecarStatus" {
        IntentRecorded = "intent_recorded",
        NotApplicable = "not_applicable",
        RetryableFailure = "retryable_failure",
    }
);
shipped_set!(
    /// Where in a host's dispatch a runtime failure happened.
    RuntimeFailurePhase as "ShippedRuntimeFailurePhase" {
        Preflight = "preflight",
        Provider = "provider",
        Finalize = "finalize",
    }
);
shipped_set!(
    /// The input's `receipt.schema_version`: a primary writeback receipt
    /// (what LoopX writes when it builds an input from a source), or a rollout
    /// event (a ready input a host hands in on the legacy path).
    InputReceiptSchema as "ShippedInputReceiptSchema" {
        PrimaryWriteback = "loopx_primary_writeback_receipt_v0",
        RolloutEvent = "loopx_rollout_event_v0",
    }
);
shipped_set!(
    /// The shipped dialect's failure codes: ten of the dispatcher, two of
    /// the host bridge (`source_projection_failed`, `dispatch_failed`).
    FailureCode as "ShippedFailureCode" {
        /// The registration, or the hook input built for it, failed the boundary; the provider never ran.
        RegistrationOrInputRejected = "registration_or_input_rejected",
        /// A later registration repeats an earlier `hook_id`; only the first runs.
        DuplicateHookId = "duplicate_hook_id",
        /// The provider raised (or left no outcome).
        ProducerFailed = "producer_failed",
        /// The provider's result failed the result contract (its budget included) or was not JSON.
        ContractRejected = "contract_rejected",
        /// The runtime returned no usable result for the hook (its transport or shape failed).
        RuntimeResultInvalid = "runtime_result_invalid",
        /// A stored receipt could not be read, or its lock failed.
        JournalReadFailed = "journal_read_failed",
        /// A receipt could not be written, or its attempts are spent.
        JournalWriteFailed = "journal_write_failed",
        /// A stored receipt disagrees with this dispatch (or changed under it).
        ReceiptConflict = "receipt_conflict",
        /// A later hook's intent reuses an earlier hook's `idempotency_key` in this dispatch.
        IntentKeyConflict = "intent_key_conflict",
        /// The receipt's lock was not acquired within its budget.
        LockAcquireTimeout = "lock_acquire_timeout",
        /// The host could not build the source (its projection raised, or the source was refused).
        SourceProjectionFailed = "source_projection_failed",
        /// The host's whole dispatch call failed unexpectedly.
        DispatchFailed = "dispatch_failed",
    }
);
