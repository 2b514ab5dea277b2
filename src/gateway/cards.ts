/**
 * The cards the gateway serves: one per agent (its skills, its interfaces with real URLs, streaming,
 * bearer security, the replay and signed-result extensions with the gateway's public key) and the
 * gateway's own card whose agent-index extension lists every agent (src/core/agentCard.ts reads it).
 */
import type { AgentCard, AgentCardSignature, AgentExtension, AgentInterface } from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import {
  AGENT_INDEX_EXTENSION_URI,
  META,
  PATCH_ARTIFACT,
  REPLAY_EXTENSION_URI,
  SIGNED_RESULT_EXTENSION_URI,
} from '../core/batonProfile';
import type { AgentIndexParams } from '../core/batonProfile';

export const GATEWAY_VERSION = '0.1.0';

export interface CardKeys {
  /** The gateway's Ed25519 public key (JWK) that verifies result envelopes and card signatures. */
  readonly publicJwk?: Readonly<Record<string, unknown>>;
  /** Signs a card (JWS over its RFC 8785 form, without `signatures`). */
  readonly sign?: (card: AgentCard) => Promise<AgentCardSignature>;
}

export function agentUrl(baseUrl: string, agentId: string): string {
  return `${baseUrl}/a2a/${encodeURIComponent(agentId)}`;
}

function interfaces(url: string): AgentInterface[] {
  return duplicateInterfacesForLegacy(
    [
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
    ],
    ['JSONRPC', 'HTTP+JSON'],
  );
}

function profileExtensions(keys: CardKeys): AgentExtension[] {
  return [
    {
      uri: REPLAY_EXTENSION_URI,
      description:
        'Every event carries a per-task seq (SSE id and metadata baton/seq); subscribe with Last-Event-ID or metadata baton/cursor to replay what was missed.',
      required: false,
      params: { header: 'Last-Event-ID', cursorMetadataKey: META.cursor, seqMetadataKey: META.seq },
    },
    {
      uri: SIGNED_RESULT_EXTENSION_URI,
      description:
        'Every terminal task carries a signed result envelope (compact JWS, EdDSA) in metadata baton/resultEnvelope.',
      required: false,
      params: { metadataKey: META.envelope, alg: 'EdDSA', ...(keys.publicJwk ? { publicKeyJwk: keys.publicJwk } : {}) },
    },
  ];
}

/**
 * Bearer tokens, required; a loopback gateway that serves tokenless requests (`anonymous` in its
 * config) still offers the scheme but requires none, so a client does not ask its user for a token.
 */
function security(tokenRequired = true) {
  return { ...SECURITY, securityRequirements: tokenRequired ? SECURITY.securityRequirements : [] };
}

const SECURITY = {
  securitySchemes: {
    bearer: {
      scheme: {
        $case: 'httpAuthSecurityScheme' as const,
        value: {
          description: 'A bearer token issued by the gateway operator (the local gateway writes one to a 0600 file).',
          scheme: 'Bearer',
          bearerFormat: 'opaque',
        },
      },
    },
  },
  securityRequirements: [{ schemes: { bearer: { list: [] } } }],
};

/**
 * What an agent behind the route declares it can do; the route card offers the gateway's features AND
 * these. Streaming is the gateway's own: it streams what it records, also of a remote that does not
 * stream (the proxy follows that one by GetTask, proxyTaskRunner.ts `sendOnce`).
 */
export interface DeclaredCapabilities {
  readonly pushNotifications: boolean;
}

export async function buildAgentCard(
  base: AgentCard,
  baseUrl: string,
  agentId: string,
  keys: CardKeys,
  declared?: DeclaredCapabilities,
  tokenRequired = true,
): Promise<AgentCard> {
  const card: AgentCard = {
    ...base,
    supportedInterfaces: interfaces(agentUrl(baseUrl, agentId)),
    provider: base.provider ?? { organization: 'Baton gateway', url: baseUrl },
    capabilities: {
      streaming: true,
      pushNotifications: declared?.pushNotifications ?? true,
      extendedAgentCard: false,
      extensions: [
        ...(base.capabilities?.extensions ?? []).filter(
          (e) => e.uri !== REPLAY_EXTENSION_URI && e.uri !== SIGNED_RESULT_EXTENSION_URI,
        ),
        ...profileExtensions(keys),
      ],
    },
    ...security(tokenRequired),
    signatures: [],
  };
  if (keys.sign) card.signatures = [await keys.sign(card)];
  return card;
}

export interface IndexedAgent {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly kind: 'builtin' | 'headless' | 'remote';
}

export async function buildGatewayCard(
  baseUrl: string,
  agents: readonly IndexedAgent[],
  keys: CardKeys,
  tokenRequired = true,
): Promise<AgentCard> {
  const index: AgentIndexParams = {
    agents: agents.map((a) => ({
      id: a.id,
      name: a.name,
      description: a.description,
      cardUrl: `/a2a/${encodeURIComponent(a.id)}/.well-known/agent-card.json`,
    })),
  };
  const card: AgentCard = {
    name: 'Baton gateway',
    description: `A2A front door for ${agents.length} agent(s): ${agents.map((a) => a.id).join(', ') || 'none'}. Each agent has its own card and route under /a2a/<agent>.`,
    supportedInterfaces: [],
    provider: { organization: 'Baton gateway', url: baseUrl },
    version: GATEWAY_VERSION,
    capabilities: {
      streaming: true,
      pushNotifications: true,
      extendedAgentCard: false,
      extensions: [
        {
          uri: AGENT_INDEX_EXTENSION_URI,
          description: 'The agents this gateway fronts; each card lives at cardUrl.',
          required: false,
          params: index as unknown as Record<string, unknown>,
        },
        ...profileExtensions(keys),
      ],
    },
    ...security(tokenRequired),
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: agents.map((a) => ({
      id: a.id,
      name: a.name,
      description: `${a.description} (${a.kind}; route /a2a/${a.id})`,
      tags: [a.kind],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    })),
    signatures: [],
  };
  if (keys.sign) card.signatures = [await keys.sign(card)];
  return card;
}

/** A skill as agents declare it (local agents and configured remote agents alike). */
export interface SkillInfo {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly examples?: readonly string[];
}

/** The part of an agent's card its runner knows; `buildAgentCard` adds interfaces, extensions and keys. */
export function baseAgentCard(name: string, description: string, skills: readonly SkillInfo[]): AgentCard {
  return {
    name,
    description,
    supportedInterfaces: [],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', PATCH_ARTIFACT.mediaType],
    skills: skills.map((s) => ({
      id: s.id,
      name: s.name,
      description: s.description,
      tags: [...s.tags],
      examples: [...(s.examples ?? [])],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    })),
    signatures: [],
  };
}
