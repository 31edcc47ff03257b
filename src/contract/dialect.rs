use super::macros::closed_set;

closed_set!(
    /// Which contract a runtime speaks and a journal row was written in. The
    /// engine (journal, writer, dispatcher) is shared; only the documents,
    /// their rules and their identities differ.
    #[derive(Default)]
    Dialect {
        /// The RFC drafts with the binding decisions of contract-v0: the default.
        #[default]
        ContractV0 = "contract-v0",
        /// The contract LoopX shipped in its own control plane.
        LoopxShippedV0 = "loopx-shipped-v0",
    }
);
