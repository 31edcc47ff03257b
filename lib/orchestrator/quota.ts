/**
 * Quota-spend eligibility (RFC 5.2, contract-v0 section 5): a pure function
 * of the primary durable-writeback receipt and the settlement it belongs to,
 * decided by the core as admission's receipt checks. Nothing from the hook
 * phase is an argument, so no hook outcome (failure, timeout, conflict, a
 * crash during dispatch) can change it.
 */
import { quotaSpendEligible as coreEligible } from '../addon.js'
import type { SettlementIdentity, WritebackReceipt } from '../../bindings/index'
import { expectArgs } from '../args.js'

/**
 * Whether a Turn effect spends quota, decided by the core from the primary
 * durable-writeback receipt and its settlement alone.
 *
 * @param receipt - the committed primary receipt.
 * @param settlement - the settlement it belongs to.
 * @returns `true` when the receipt is a committed one of that settlement.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when either argument is not an object.
 */
export function quotaSpendEligible(
  receipt: Readonly<WritebackReceipt>,
  settlement: Readonly<SettlementIdentity>,
): boolean {
  expectArgs('quotaSpendEligible', { receipt: [receipt, 'object'], settlement: [settlement, 'object'] })
  return coreEligible(receipt, settlement)
}

/** The units one settled Turn effect spends. */
export const QUOTA_UNITS_PER_SETTLEMENT = 1
