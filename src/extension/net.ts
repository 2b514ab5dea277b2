/**
 * Baton's network stack for the extension host (undici, with address pinning), built as its own bundle
 * (dist/net.js) and loaded on first use through `loadNet()`, so activating Baton does not parse it.
 */
export { fetchAgentCard, pinningStatus, SafeFetchError } from '../node/safeFetch';
export { discoverAgents, discoveryLog, discoverySummary } from '../node/agentDiscovery';
