# Serves an a2a-sdk card so it can be captured as a fixture (notes/a2a-protocol.md §7 recipe).
# Usage: /work/venv/bin/python capture_sdk_cards.py PORT plain|rich, then
#   curl http://127.0.0.1:PORT/.well-known/agent-card.json > hybrid_sdk_echo.json (plain)
#   or > hybrid_sdk_constraints.json (rich: input-constraints extension, apiKey + oauth2 schemes).
# The fixtures were captured from a2a-sdk 1.3.0 and are kept byte for byte as served.
import sys, uvicorn
from starlette.applications import Starlette
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import *
from google.protobuf import struct_pb2
PORT = int(sys.argv[1]); MODE = sys.argv[2]; BASE = f'http://127.0.0.1:{PORT}'
class Echo(AgentExecutor):
    async def execute(self, ctx, q): pass
    async def cancel(self, ctx, q): raise NotImplementedError
if MODE == 'plain':
    card = AgentCard(name='Echo', description='echoes text', version='1.0.0',
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=['text/plain'], default_output_modes=['text/plain'],
        skills=[AgentSkill(id='echo', name='Echo', description='echo', tags=['echo'])],
        supported_interfaces=[AgentInterface(protocol_binding='JSONRPC', protocol_version=v, url=f'{BASE}/') for v in ('1.0', '0.3')]
                            + [AgentInterface(protocol_binding='HTTP+JSON', protocol_version='1.0', url=f'{BASE}/rest')])
else:
    params = struct_pb2.Struct()
    params.update({'files': {'maxSizePerFileBytes': 5242880, 'maxCountPerRequest': 4, 'maxTotalSizeBytes': 10485760,
                              'perMimeType': {'image/png': {'maxSizeBytes': 2097152, 'maxDimensions': {'width': 2048, 'height': 2048}}}},
                   'text': {'maxCharacters': 20000}})
    card = AgentCard(name='Vision', description='describes images', version='2.1.0',
        provider=AgentProvider(organization='Example Org', url='https://example.org'),
        capabilities=AgentCapabilities(streaming=True, push_notifications=False, extended_agent_card=True,
            extensions=[AgentExtension(uri='https://inkeep.com/a2a-extensions/input-constraints/v1',
                                       description='input limits', required=False, params=params)]),
        default_input_modes=['text/plain', 'image/png', 'image/jpeg'], default_output_modes=['text/plain'],
        skills=[AgentSkill(id='describe', name='Describe', description='describes an image', tags=['vision'],
                           input_modes=['image/png','image/jpeg'])],
        security_schemes={
            'apiKey': SecurityScheme(api_key_security_scheme=APIKeySecurityScheme(location='header', name='X-API-Key')),
            'oauth': SecurityScheme(oauth2_security_scheme=OAuth2SecurityScheme(flows=OAuthFlows(
                client_credentials=ClientCredentialsOAuthFlow(token_url='https://auth.example.org/token', scopes={'read': 'read access'})))),
        },
        security_requirements=[SecurityRequirement(schemes={'apiKey': StringList(list=[])})],
        supported_interfaces=[AgentInterface(protocol_binding='JSONRPC', protocol_version='1.0', url=f'{BASE}/'),
                              AgentInterface(protocol_binding='JSONRPC', protocol_version='0.3', url=f'{BASE}/'),
                              AgentInterface(protocol_binding='HTTP+JSON', protocol_version='0.3', url=f'{BASE}/v1')])
h = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(h, rpc_url='/', enable_v0_3_compat=True)
                + create_rest_routes(h, path_prefix='/rest'))
uvicorn.run(app, host='127.0.0.1', port=PORT, log_level='warning')
