/** Agent cards used across the card, registry and fetch tests. */
export function v1Card(base = 'https://agents.example.com'): Record<string, unknown> {
  return {
    name: 'Formatter',
    description: 'Formats code with prettier.',
    version: '1.2.0',
    provider: { organization: 'Example Corp', url: 'https://example.com' },
    supportedInterfaces: [
      { url: `${base}/a2a/formatter`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${base}/a2a/formatter/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: 't1' },
    ],
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extensions: [
        { uri: 'urn:baton:a2a:replay:v1', description: 'Replay', required: false, params: { maxEvents: 10000 } },
      ],
    },
    securitySchemes: {
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'opaque' } },
      key: { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key' } },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain', 'text/x-diff'],
    skills: [
      { id: 'format', name: 'Format', description: 'Format files', tags: ['prettier'], examples: ['format src'] },
    ],
    'x-unknown-field': { tolerated: true },
  };
}

export function v03Card(base = 'https://legacy.example.com'): Record<string, unknown> {
  return {
    name: 'Legacy',
    description: 'An A2A 0.3 agent.',
    version: '0.9.0',
    protocolVersion: '0.3.0',
    url: `${base}/a2a`,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [
      { url: `${base}/a2a`, transport: 'JSONRPC' },
      { url: `${base}/a2a/rest`, transport: 'HTTP+JSON' },
    ],
    capabilities: { streaming: false },
    supportsAuthenticatedExtendedCard: true,
    securitySchemes: {
      apikey: { type: 'apiKey', in: 'header', name: 'X-Key' },
      bearer: { type: 'http', scheme: 'bearer' },
    },
    security: [{ apikey: [] }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'chat', name: 'Chat', description: 'Talk', tags: [] }],
  };
}
