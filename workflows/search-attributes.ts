import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

// Keelson's custom search attributes, registered on the server by `keelson dev up` (and by operators in production).
export const rolloutKey = defineSearchAttributeKey('KeelsonRollout', SearchAttributeType.KEYWORD_LIST);
export const nodeKey = defineSearchAttributeKey('KeelsonNode', SearchAttributeType.KEYWORD);
export const packageKey = defineSearchAttributeKey('KeelsonPackage', SearchAttributeType.KEYWORD_LIST);
export const stageKey = defineSearchAttributeKey('KeelsonStage', SearchAttributeType.KEYWORD);
export const stateKey = defineSearchAttributeKey('KeelsonState', SearchAttributeType.KEYWORD);

export const searchAttributeKeys = [rolloutKey, nodeKey, packageKey, stageKey, stateKey];
