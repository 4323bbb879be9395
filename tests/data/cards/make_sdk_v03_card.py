# Prints a pure v0.3 card made by a2a-sdk 1.3.0's own v0.3 compat layer (to_compat_agent_card).
# Usage: /work/venv/bin/python make_sdk_v03_card.py > v03_sdk_compat.json
import json
from a2a.types import *
from a2a.compat.v0_3.conversions import to_compat_agent_card
card = AgentCard(name='Legacy Vision', description='describes images over the v0.3 protocol', version='0.9.0',
    provider=AgentProvider(organization='Example Org', url='https://example.org'),
    capabilities=AgentCapabilities(streaming=True, push_notifications=True),
    default_input_modes=['text/plain', 'image/png'], default_output_modes=['text/plain'],
    skills=[AgentSkill(id='describe', name='Describe', description='describes an image', tags=['vision'], examples=['what is this?'])],
    security_schemes={
        'bearer': SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme='Bearer', bearer_format='JWT')),
        'oidc': SecurityScheme(open_id_connect_security_scheme=OpenIdConnectSecurityScheme(open_id_connect_url='https://auth.example.org/.well-known/openid-configuration')),
    },
    security_requirements=[SecurityRequirement(schemes={'bearer': StringList(list=[])})],
    supported_interfaces=[AgentInterface(protocol_binding='JSONRPC', protocol_version='0.3', url='https://agent.example.org/a2a'),
                          AgentInterface(protocol_binding='HTTP+JSON', protocol_version='0.3', url='https://agent.example.org/a2a/rest')])
compat = to_compat_agent_card(card)
print(compat.model_dump_json(by_alias=True, exclude_none=True))
