/**
 * Agent Cards, A2A 1.0 and 0.3, normalised into one shape Baton reviews, pins and calls.
 *
 * 1.0 cards list `supportedInterfaces` (first = preferred). 0.3 cards name `url` + `preferredTransport`,
 * more in `additionalInterfaces`, and a card-level `protocolVersion`. Unknown fields are tolerated and
 * kept in `raw` (they are covered by the digest and by signatures). A field of the wrong type is an
 * error that names it (`skills[2].id`), so a user can tell the agent's owner what to fix.
 *
 * The digest is `sha256:` of the RFC 8785 form of the card as served, without `signatures` — the same
 * bytes a card signature covers (A2A §8.4), so "the card I reviewed" and "the card that was signed"
 * are one notion.
 */
import { AGENT_INDEX_EXTENSION_URI } from './batonProfile';
import { canonicalize, JcsError, jcsDigest, memberPath, parseStrictJson, StrictJsonError } from './jcs';
import { isRecord } from './isRecord';

export type AgentCardErrorCode = 'not-json' | 'duplicate-key' | 'too-deep' | 'invalid-card';

export class AgentCardError extends Error {
  constructor(
    readonly code: AgentCardErrorCode,
    message: string,
    /** The offending field, e.g. `supportedInterfaces[0].url`; empty for the whole document. */
    readonly path: string,
  ) {
    super(message);
    this.name = 'AgentCardError';
  }
}

export interface AgentInterfaceInfo {
  readonly url: string;
  /** `JSONRPC`, `HTTP+JSON`, `GRPC`, or another binding name as the card spells it. */
  readonly binding: string;
  /** `1.0`, `0.3`, … ('' when the card does not say). */
  readonly protocolVersion: string;
  /** Copied into requests on this interface ('' for none). */
  readonly tenant: string;
  /** `scheme://host[:port]` of `url`. */
  readonly origin: string;
}

export interface AgentSkillInfo {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly examples: readonly string[];
  readonly inputModes: readonly string[];
  readonly outputModes: readonly string[];
}

export interface AgentExtensionInfo {
  readonly uri: string;
  readonly description: string;
  readonly required: boolean;
  readonly params: Readonly<Record<string, unknown>> | undefined;
}

export type SecuritySchemeInfo =
  | {
      readonly kind: 'http';
      readonly name: string;
      readonly scheme: string;
      readonly bearerFormat: string;
      readonly description: string;
    }
  | {
      readonly kind: 'apiKey';
      readonly name: string;
      readonly location: string;
      readonly parameter: string;
      readonly description: string;
    }
  | { readonly kind: 'oauth2'; readonly name: string; readonly description: string }
  | {
      readonly kind: 'openIdConnect';
      readonly name: string;
      readonly openIdConnectUrl: string;
      readonly description: string;
    }
  | { readonly kind: 'mtls'; readonly name: string; readonly description: string }
  | { readonly kind: 'unknown'; readonly name: string; readonly description: string };

/** One alternative: every named scheme (with its scopes) must be satisfied. */
export type SecurityRequirementInfo = Readonly<Record<string, readonly string[]>>;

/** A2A `AgentCardSignature`: a JWS in flattened form with the payload detached. */
export interface CardSignature {
  readonly protected: string;
  readonly signature: string;
  readonly header?: Readonly<Record<string, unknown>>;
}

export interface NormalizedAgentCard {
  /** Which layout the card uses: `1.0` (`supportedInterfaces`) or `0.3` (`url`, `preferredTransport`). */
  readonly format: '1.0' | '0.3';
  readonly name: string;
  readonly description: string;
  readonly version: string;
  readonly provider: { readonly organization: string; readonly url: string } | undefined;
  readonly documentationUrl: string | undefined;
  readonly iconUrl: string | undefined;
  /** Every interface, preferred first. Empty only for a gateway's index card (see `readAgentIndex`). */
  readonly interfaces: readonly AgentInterfaceInfo[];
  /** The first interface; undefined only for an index card that lists agents but serves none itself. */
  readonly preferredInterface: AgentInterfaceInfo | undefined;
  readonly capabilities: {
    readonly streaming: boolean;
    readonly pushNotifications: boolean;
    readonly extendedAgentCard: boolean;
    readonly extensions: readonly AgentExtensionInfo[];
  };
  readonly defaultInputModes: readonly string[];
  readonly defaultOutputModes: readonly string[];
  readonly skills: readonly AgentSkillInfo[];
  readonly securitySchemes: readonly SecuritySchemeInfo[];
  readonly securityRequirements: readonly SecurityRequirementInfo[];
  readonly signatures: readonly CardSignature[];
  /** The card as served (parsed JSON), unknown fields included. */
  readonly raw: Readonly<Record<string, unknown>>;
}

export interface ParsedAgentCard {
  readonly card: NormalizedAgentCard;
  /** `sha256:<hex>` of the RFC 8785 form of the card without `signatures`. */
  readonly digest: string;
}

/**
 * Text as served → normalised card and digest. Refuses invalid JSON, duplicate member names and
 * nesting deeper than 64 levels before looking at the content.
 */
export function parseAgentCard(text: string): ParsedAgentCard {
  let raw: unknown;
  try {
    raw = parseStrictJson(text);
  } catch (e) {
    if (e instanceof StrictJsonError) {
      const code: AgentCardErrorCode = e.code === 'syntax' ? 'not-json' : e.code;
      const where = e.path ? ` at ${e.path}` : '';
      throw new AgentCardError(code, `The agent card is not valid JSON: ${e.message}${where}.`, e.path);
    }
    throw e;
  }
  const card = normalizeAgentCard(raw);
  return { card, digest: agentCardDigest(card.raw) };
}

/** The bytes a card signature covers and the digest is taken over: RFC 8785 of the card without `signatures`. */
export function cardSigningPayload(raw: Readonly<Record<string, unknown>>): string {
  const { signatures: _omit, ...rest } = raw;
  try {
    return canonicalize(rest);
  } catch (e) {
    if (e instanceof JcsError)
      throw new AgentCardError('invalid-card', `The agent card cannot be canonicalised: ${e.message}.`, e.path);
    throw e;
  }
}

/** `sha256:<hex>` of `cardSigningPayload(raw)`. */
export function agentCardDigest(raw: Readonly<Record<string, unknown>>): string {
  const { signatures: _omit, ...rest } = raw;
  try {
    return jcsDigest(rest);
  } catch (e) {
    if (e instanceof JcsError)
      throw new AgentCardError('invalid-card', `The agent card cannot be canonicalised: ${e.message}.`, e.path);
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------------
// Field readers: each names the path of what it refuses.

type Obj = Readonly<Record<string, unknown>>;

function invalid(path: string, what: string): never {
  throw new AgentCardError('invalid-card', `Invalid agent card: ${path || 'the card'} ${what}.`, path);
}

function field(o: Obj, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(o, key) ? o[key] : undefined;
}

function str(o: Obj, key: string, path: string, required = false): string {
  const v = field(o, key);
  const p = memberPath(path, key);
  if (v === undefined || v === null) {
    if (required) invalid(p, 'is required');
    return '';
  }
  if (typeof v !== 'string') invalid(p, 'must be a string');
  if (required && v.trim() === '') invalid(p, 'must not be empty');
  return v;
}

function bool(o: Obj, key: string, path: string): boolean {
  const v = field(o, key);
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') invalid(memberPath(path, key), 'must be true or false');
  return v;
}

function obj(o: Obj, key: string, path: string): Obj | undefined {
  const v = field(o, key);
  if (v === undefined || v === null) return undefined;
  if (!isRecord(v)) invalid(memberPath(path, key), 'must be an object');
  return v;
}

function arr(o: Obj, key: string, path: string): readonly unknown[] {
  const v = field(o, key);
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) invalid(memberPath(path, key), 'must be an array');
  return v;
}

function strings(o: Obj, key: string, path: string): string[] {
  const p = memberPath(path, key);
  return arr(o, key, path).map((v, i) => {
    if (typeof v !== 'string') invalid(`${p}[${i}]`, 'must be a string');
    return v;
  });
}

function objects(o: Obj, key: string, path: string): { value: Obj; path: string }[] {
  const p = memberPath(path, key);
  return arr(o, key, path).map((v, i) => {
    if (!isRecord(v)) invalid(`${p}[${i}]`, 'must be an object');
    return { value: v, path: `${p}[${i}]` };
  });
}

function absoluteUrl(value: string, path: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return invalid(path, `must be an absolute URL (got ${JSON.stringify(value.slice(0, 200))})`);
  }
  return url;
}

/** `scheme://host[:port]`, for any scheme (URL#origin is "null" for non-special schemes). */
export function originOf(url: string | URL): string {
  const u = typeof url === 'string' ? new URL(url) : url;
  return `${u.protocol}//${u.host}`;
}

const HTTP_BINDINGS = new Set(['JSONRPC', 'HTTP+JSON']);

function makeInterface(
  url: string,
  binding: string,
  protocolVersion: string,
  tenant: string,
  path: string,
): AgentInterfaceInfo {
  const parsed = absoluteUrl(url, memberPath(path, 'url'));
  if (HTTP_BINDINGS.has(binding.toUpperCase()) && parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    invalid(memberPath(path, 'url'), `must be an http(s) URL for the ${binding} binding`);
  }
  if (parsed.username || parsed.password) invalid(memberPath(path, 'url'), 'must not carry credentials');
  return { url, binding, protocolVersion, tenant, origin: originOf(parsed) };
}

// ---------------------------------------------------------------------------------------------------

/** Parsed JSON → normalised card. Throws `AgentCardError` (code `invalid-card`) naming the field. */
export function normalizeAgentCard(raw: unknown): NormalizedAgentCard {
  if (!isRecord(raw)) return invalid('', 'must be a JSON object');
  const name = str(raw, 'name', '', true);
  const description = str(raw, 'description', '');
  const version = str(raw, 'version', '');

  const caps = obj(raw, 'capabilities', '') ?? {};
  const interfaces = readInterfaces(raw, isIndexCard(caps));
  const providerObj = obj(raw, 'provider', '');
  const provider = providerObj
    ? { organization: str(providerObj, 'organization', 'provider'), url: str(providerObj, 'url', 'provider') }
    : undefined;

  const extensions = objects(caps, 'extensions', 'capabilities').map(({ value, path }) => ({
    uri: str(value, 'uri', path, true),
    description: str(value, 'description', path),
    required: bool(value, 'required', path),
    params: obj(value, 'params', path),
  }));

  const skills = objects(raw, 'skills', '').map(({ value, path }) => ({
    id: str(value, 'id', path, true),
    name: str(value, 'name', path, true),
    description: str(value, 'description', path),
    tags: strings(value, 'tags', path),
    examples: strings(value, 'examples', path),
    inputModes: strings(value, 'inputModes', path),
    outputModes: strings(value, 'outputModes', path),
  }));

  const signatures = objects(raw, 'signatures', '').map(({ value, path }) => {
    const header = obj(value, 'header', path);
    const sig: CardSignature = {
      protected: str(value, 'protected', path, true),
      signature: str(value, 'signature', path, true),
      ...(header ? { header } : {}),
    };
    return sig;
  });

  return {
    format: Array.isArray(field(raw, 'supportedInterfaces')) ? '1.0' : '0.3',
    name,
    description,
    version,
    provider,
    documentationUrl: str(raw, 'documentationUrl', '') || undefined,
    iconUrl: str(raw, 'iconUrl', '') || undefined,
    interfaces,
    preferredInterface: interfaces[0],
    capabilities: {
      streaming: bool(caps, 'streaming', 'capabilities'),
      pushNotifications: bool(caps, 'pushNotifications', 'capabilities'),
      // 0.3 put this at the top level.
      extendedAgentCard:
        bool(caps, 'extendedAgentCard', 'capabilities') || bool(raw, 'supportsAuthenticatedExtendedCard', ''),
      extensions,
    },
    defaultInputModes: strings(raw, 'defaultInputModes', ''),
    defaultOutputModes: strings(raw, 'defaultOutputModes', ''),
    skills,
    securitySchemes: readSecuritySchemes(raw),
    securityRequirements: readSecurityRequirements(raw),
    signatures,
    raw,
  };
}

/** A gateway's root card may list agents and serve none itself (src/gateway/cards.ts). */
function isIndexCard(caps: Obj): boolean {
  const ext = field(caps, 'extensions');
  return Array.isArray(ext) && ext.some((e) => isRecord(e) && e.uri === AGENT_INDEX_EXTENSION_URI);
}

function readInterfaces(raw: Obj, indexCard: boolean): AgentInterfaceInfo[] {
  const out: AgentInterfaceInfo[] = [];
  const add = (i: AgentInterfaceInfo): void => {
    if (!out.some((o) => o.url === i.url && o.binding === i.binding && o.tenant === i.tenant)) out.push(i);
  };
  const hasV1 = field(raw, 'supportedInterfaces') !== undefined;
  for (const { value, path } of objects(raw, 'supportedInterfaces', '')) {
    add(
      makeInterface(
        str(value, 'url', path, true),
        str(value, 'protocolBinding', path, true),
        str(value, 'protocolVersion', path),
        str(value, 'tenant', path),
        path,
      ),
    );
  }
  // 0.3 layout. A card may carry both (the SDK's legacy mode embeds `supportedInterfaces` in a 0.3
  // card); every URL a client could be sent to is listed, so the origin check sees all of them.
  const legacyUrl = field(raw, 'url');
  // A gateway's index card may serve no interface of its own (the SDK drops an empty list on the wire).
  if (!hasV1 && legacyUrl === undefined && !indexCard)
    invalid('supportedInterfaces', 'is required (an A2A 0.3 card names `url` instead)');
  if (legacyUrl !== undefined) {
    const url = str(raw, 'url', '', true);
    const cardVersion = str(raw, 'protocolVersion', '');
    const binding = str(raw, 'preferredTransport', '') || 'JSONRPC';
    add(makeInterface(url, binding, cardVersion, '', ''));
    for (const { value, path } of objects(raw, 'additionalInterfaces', '')) {
      add(makeInterface(str(value, 'url', path, true), str(value, 'transport', path, true), cardVersion, '', path));
    }
  }
  if (out.length === 0 && !indexCard) invalid('supportedInterfaces', 'must list at least one interface');
  return out;
}

function readSecuritySchemes(raw: Obj): SecuritySchemeInfo[] {
  const schemes = obj(raw, 'securitySchemes', '');
  if (!schemes) return [];
  return Object.keys(schemes).map((name): SecuritySchemeInfo => {
    const path = memberPath('securitySchemes', name);
    const s = obj(schemes, name, 'securitySchemes');
    if (!s) return invalid(path, 'must be an object');
    // 1.0: a oneof wrapper ({"httpAuthSecurityScheme": {...}}); 0.3: OpenAPI-style {"type": "http", ...}.
    // The SDK's in-memory form ({"scheme": {"$case": "httpAuthSecurityScheme", "value": {...}}}) is
    // what its card handler serves when given an in-memory card, so it is read too.
    const schemeField = field(s, 'scheme');
    const tagged = isRecord(schemeField) ? schemeField : undefined; // 0.3 http schemes have a string here
    const tag = tagged && typeof tagged.$case === 'string' ? tagged.$case : undefined;
    const taggedValue = (k: string): Obj | undefined =>
      tag === k && tagged ? obj(tagged, 'value', memberPath(path, 'scheme')) : undefined;
    const http = obj(s, 'httpAuthSecurityScheme', path) ?? taggedValue('httpAuthSecurityScheme');
    const apiKey = obj(s, 'apiKeySecurityScheme', path) ?? taggedValue('apiKeySecurityScheme');
    const oauth2 = obj(s, 'oauth2SecurityScheme', path) ?? taggedValue('oauth2SecurityScheme');
    const oidc = obj(s, 'openIdConnectSecurityScheme', path) ?? taggedValue('openIdConnectSecurityScheme');
    const mtls = obj(s, 'mtlsSecurityScheme', path) ?? taggedValue('mtlsSecurityScheme');
    const sub = (k: string): string =>
      tag === k ? memberPath(memberPath(path, 'scheme'), 'value') : memberPath(path, k);
    if (http) {
      return {
        kind: 'http',
        name,
        scheme: str(http, 'scheme', sub('httpAuthSecurityScheme'), true),
        bearerFormat: str(http, 'bearerFormat', sub('httpAuthSecurityScheme')),
        description: str(http, 'description', sub('httpAuthSecurityScheme')),
      };
    }
    if (apiKey) {
      const p = sub('apiKeySecurityScheme');
      return {
        kind: 'apiKey',
        name,
        location: str(apiKey, 'location', p, true),
        parameter: str(apiKey, 'name', p, true),
        description: str(apiKey, 'description', p),
      };
    }
    if (oauth2) return { kind: 'oauth2', name, description: str(oauth2, 'description', sub('oauth2SecurityScheme')) };
    if (oidc) {
      const p = sub('openIdConnectSecurityScheme');
      return {
        kind: 'openIdConnect',
        name,
        openIdConnectUrl: str(oidc, 'openIdConnectUrl', p),
        description: str(oidc, 'description', p),
      };
    }
    if (mtls) return { kind: 'mtls', name, description: str(mtls, 'description', sub('mtlsSecurityScheme')) };
    if (tag) return { kind: 'unknown', name, description: '' };
    const type = str(s, 'type', path);
    const description = str(s, 'description', path);
    switch (type) {
      case 'http':
        return {
          kind: 'http',
          name,
          scheme: str(s, 'scheme', path, true),
          bearerFormat: str(s, 'bearerFormat', path),
          description,
        };
      case 'apiKey':
        return {
          kind: 'apiKey',
          name,
          location: str(s, 'in', path, true),
          parameter: str(s, 'name', path, true),
          description,
        };
      case 'oauth2':
        return { kind: 'oauth2', name, description };
      case 'openIdConnect':
        return { kind: 'openIdConnect', name, openIdConnectUrl: str(s, 'openIdConnectUrl', path), description };
      case 'mutualTLS':
        return { kind: 'mtls', name, description };
      default:
        return { kind: 'unknown', name, description };
    }
  });
}

function readSecurityRequirements(raw: Obj): SecurityRequirementInfo[] {
  // 1.0: [{"schemes": {"bearer": {"list": ["scope"]}}}]
  const v1 = objects(raw, 'securityRequirements', '').map(({ value, path }) => {
    const schemes = obj(value, 'schemes', path) ?? {};
    const out: Record<string, string[]> = {};
    for (const name of Object.keys(schemes)) {
      const entry = obj(schemes, name, memberPath(path, 'schemes'));
      out[name] = entry ? strings(entry, 'list', memberPath(memberPath(path, 'schemes'), name)) : [];
    }
    return out;
  });
  // 0.3: [{"bearer": ["scope"]}]
  const v03 = objects(raw, 'security', '').map(({ value, path }) => {
    const out: Record<string, string[]> = {};
    for (const name of Object.keys(value)) out[name] = strings(value, name, path);
    return out;
  });
  return [...v1, ...v03];
}

// ---------------------------------------------------------------------------------------------------

/**
 * Interfaces whose origin differs from the card's. Baton binds tokens to the origin the user
 * approved (the card's), never to one a card names, so the UI must say so for each of these.
 */
export function offOriginInterfaces(card: NormalizedAgentCard, cardUrl: string): AgentInterfaceInfo[] {
  const origin = originOf(cardUrl);
  return card.interfaces.filter((i) => i.origin !== origin);
}

export interface AgentIndexItem {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  /** Absolute: relative entries are resolved against the root card's URL. */
  readonly cardUrl: string;
  /** True when the entry's card lives on another origin than the gateway's root card. */
  readonly offOrigin: boolean;
}

/**
 * The agents a gateway's root card lists (the `AGENT_INDEX_EXTENSION_URI` extension's `params.agents`),
 * or `[]` when the card has no index. Entries are validated like the card: errors name the field.
 */
export function readAgentIndex(card: NormalizedAgentCard, rootCardUrl: string): AgentIndexItem[] {
  const idx = card.capabilities.extensions.findIndex((e) => e.uri === AGENT_INDEX_EXTENSION_URI);
  if (idx < 0) return [];
  const params = card.capabilities.extensions[idx].params ?? {};
  const base = `capabilities.extensions[${idx}].params`;
  const origin = originOf(rootCardUrl);
  return objects(params, 'agents', base).map(({ value, path }) => {
    const rel = str(value, 'cardUrl', path, true);
    let url: URL;
    try {
      url = new URL(rel, rootCardUrl);
    } catch {
      return invalid(memberPath(path, 'cardUrl'), 'must be a URL');
    }
    return {
      id: str(value, 'id', path, true),
      name: str(value, 'name', path) || str(value, 'id', path, true),
      description: str(value, 'description', path),
      cardUrl: url.href,
      offOrigin: originOf(url) !== origin,
    };
  });
}
