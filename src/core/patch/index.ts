/** The patch model, its parser, the risk classifier and sub-patch building. */
export { PatchParseError, displayPath } from './patchModel';
export type { ByteRange, ParsedPatch, PatchFile, PatchFileStatus, PatchHunk, PatchSelection } from './patchModel';
export { PatchStreamParser, gitQuotePath, parsePatchBytes, parsePatchText } from './patchParser';
export {
  changedPackageScripts,
  classifyPatch,
  classifyPath,
  defaultSelection,
  foldSegment,
  unresolvedRefusals,
} from './patchRisk';
export type { ClassifyOptions, RiskItem, RiskKind, RiskReport, RiskSeverity } from './patchRisk';
export { riskReasonText } from './riskText';
export { applyMessageText } from './applyText';
export type { ApplyMessage } from './applyText';
export type { RiskMessage, SensitiveFolder, SensitiveName } from './riskText';
export {
  NOTHING_APPLIED,
  PatchSelectionError,
  buildSubPatch,
  continuationFile,
  fileText,
  remainingHunks,
  renderSubPatch,
  resolveSelection,
} from './subPatch';
export type { AppliedParts, PatchPart, SelectedFile, SubPatch } from './subPatch';
export {
  appliedParts,
  fileApplyState,
  hunkApplied,
  isEmptySelection,
  remainingOf,
  remainingOffered,
} from './appliedParts';
export type { AppliedFileRef, ApplyState } from './appliedParts';
export { applyHunks } from './patchText';
