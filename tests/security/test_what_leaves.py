"""What reaches a remote engine of the documents the editor opened (docs/deploy.md, "What leaves
the developer's machine"): checked on every request body a fake llama-server received, with the
real completion service and worker. A secret file (`.env`, a key) never reaches it, neither as
other files' context nor as a prompt of its own; nor does a document of a language without
suggestions, nor one the editor closed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from spec_lsp.completion import CompletionService
from spec_lsp.completion.neighbours import Neighbours, private, shareable
from spec_lsp.config import Options
from spec_lsp.remote import RemoteSpec, connect
from spec_lsp.worker import InferenceWorker, ModelInfo
from tests.fakes import PlainSyntax
from tests.remote.fake_engine import Clock, FakeEngine

pytestmark = pytest.mark.timeout(60)

MAIN = "file:///w/main.py"
MAIN_TEXT = "from shapes import Rectangle\n\nr = Rectangle(2, 3)\nprint("
SHAPES = ("file:///w/shapes.py", "python", "class Rectangle:\n    '''a shape, width by height'''\n")
SECRETS = [  # (uri, language id, text): each text holds a marker no request may carry
    ("file:///w/.env", "dotenv", "API_KEY=sk-live-ENVMARKER-0123456789abcdef\n"),
    ("file:///w/.env.production", "dotenv", "DB_PASSWORD=PRODMARKER-hunter2-hunter2\n"),
    ("file:///home/u/.ssh/id_rsa", "plaintext", "-----BEGIN KEY----- RSAMARKER abcdefgh\n"),
    ("file:///w/tls/server.pem", "plaintext", "-----BEGIN CERTIFICATE----- PEMMARKER xyz\n"),
    ("file:///w/config/client_secret.json", "json", '{"secret": "JSONMARKER-0123456789"}\n'),
    # Issue 41 item 8: these reached prompts and `input_extra` before.
    ("file:///w/deploy/service-account.json", "json", '{"private_key": "GCPMARKER-0123"}\n'),
    ("file:///home/u/.config/gh/hosts.yml", "yaml", "oauth_token: gho_GHMARKER0123456789\n"),
    ("file:///w/ops/kubeconfig", "yaml", "token: KUBEMARKER-0123456789abcdef\n"),
    ("file:///home/u/.vault-token", "plaintext", "hvs.VAULTMARKER0123456789abcdef\n"),
    ("file:///home/u/.s3cfg", "ini", "secret_key = S3MARKER-0123456789abcdef\n"),
    ("file:///w/infra/terraform.tfstate.backup", "json", '{"password": "TFMARKER-0123"}\n'),
    ("file:///w/keys/deploy.ppk", "plaintext", "Private-Lines: 14 PPKMARKER-0123456789\n"),
    ("file:///w/.yarnrc.yml", "yaml", "npmAuthToken: YARNMARKER-0123456789abcdef\n"),
    ("file:///home/u/.m2/settings.xml", "xml", "<password>MAVENMARKER-0123456</password>\n"),
    ("file:///w/env.production", "plaintext", "DB_PASSWORD=ENVPRODMARKER-hunter2-hunter2\n"),
]
MARKERS = ("ENVMARKER", "PRODMARKER", "RSAMARKER", "PEMMARKER", "JSONMARKER", "GCPMARKER")
MARKERS += ("GHMARKER", "KUBEMARKER", "VAULTMARKER", "S3MARKER", "TFMARKER", "PPKMARKER")
MARKERS += ("YARNMARKER", "MAVENMARKER", "ENVPRODMARKER")


@pytest.fixture
def fake() -> Iterator[FakeEngine]:
    engine = FakeEngine(["r.width"], delay_s=0.001)
    yield engine
    engine.stop()


async def service_on(fake: FakeEngine, fim: str, **options: object) -> CompletionService:
    spec = RemoteSpec(kind="llama-server", url=fake.url, fim=fim, read_timeout_s=2.0)
    worker = InferenceWorker(asyncio.get_running_loop())
    info = ModelInfo(preset="remote", device="remote", fim=fim, context_tokens=2048)
    worker.backend, worker.state, worker.info = connect(spec), "ready", info
    opts = Options(max_tokens=16, prefetch=False, **options)  # type: ignore[arg-type]
    service = CompletionService(worker, opts, PlainSyntax(), clock=Clock())
    service.model_ready()
    return service


async def complete_after_a_pause(service: CompletionService, uri: str) -> str | None:
    doc = service.docs.get(uri)
    assert doc is not None
    clock = service.arrivals.clock
    assert isinstance(clock, Clock)  # `service_on`'s: requests come as the test says
    clock.advance(5)  # a pause: pending notes settle
    row, col = len(doc.lines) - 1, len(doc.lines[-1])
    suggestion = await service.complete(uri, row, col, "utf-16")
    return None if suggestion is None else suggestion.text


def sent(fake: FakeEngine) -> str:
    return json.dumps(fake.bodies + fake.warm_bodies)


@pytest.mark.parametrize("fim", ["qwen", "none"])  # input_extra (/infill), or in the prompt
async def test_secret_files_opened_in_the_editor_never_reach_the_engine(
    fake: FakeEngine, fim: str
) -> None:
    service = await service_on(fake, fim)
    service.did_open(*SHAPES[:2], 1, SHAPES[2])
    for uri, language, text in SECRETS:
        service.did_open(uri, language, 1, text)
        service.did_change(uri, 2, [((0, 0, 0, 0), "# edited\n")], "utf-16")
    service.did_open(MAIN, "python", 1, MAIN_TEXT)
    for _ in range(2):  # the second request after a pause: every pending note has settled
        assert await complete_after_a_pause(service, MAIN) == "r.width"
    for uri, _, _ in SECRETS:  # completing inside one sends nothing at all
        assert await complete_after_a_pause(service, uri) is None
    body = sent(fake)
    assert "class Rectangle" in body  # other files' context does go: the check can see it
    assert not [m for m in MARKERS if m in body]


async def test_a_language_without_suggestions_and_a_closed_file_are_not_sent(
    fake: FakeEngine,
) -> None:
    service = await service_on(fake, "qwen", enabled_languages=("python",))
    service.did_open(
        "file:///w/notes.md", "markdown", 1, "# MDMARKER: the release plan, in words\n"
    )
    service.did_open(*SHAPES[:2], 1, SHAPES[2])
    service.did_open(MAIN, "python", 1, MAIN_TEXT)
    await complete_after_a_pause(service, MAIN)
    await complete_after_a_pause(service, MAIN)
    assert "class Rectangle" in json.dumps(fake.bodies[-1])
    service.did_close(SHAPES[0])
    before = len(fake.bodies)
    service.did_change(MAIN, 2, [((3, 6, 3, 6), "z")], "utf-16")  # not typed through: asked anew
    await complete_after_a_pause(service, MAIN)
    assert len(fake.bodies) == before + 1
    assert "class Rectangle" not in json.dumps(fake.bodies[-1])  # closed: forgotten
    assert "MDMARKER" not in sent(fake)


def test_the_private_list_takes_the_users_patterns_on_top_of_the_built_in_ones() -> None:
    plain, mine = Options(), Options(private_files=("*.sql", "*/vault/*"))
    for uri in (
        "file:///w/.env",
        "file:///w/.ENV.local",
        "file:///h/.ssh/config",
        "file:///w/a.key",
    ):
        assert private(plain, uri) and private(mine, uri)
    assert not private(plain, "file:///w/dump.sql") and private(mine, "file:///w/dump.sql")
    assert private(mine, "file:///w/vault/notes.py") and not private(mine, "file:///w/main.py")
    assert private(Options(exclude=("*.md",)), "file:///w/README.md")  # exclude counts too
    assert not shareable(
        Options(enabled_languages=("*", "!markdown")), "file:///w/a.md", "markdown"
    )


@pytest.mark.parametrize(
    "path",
    [
        "/w/terraform.tfstate",
        "/w/terraform.tfstate.backup",
        "/w/putty/server.PPK",
        "/h/.config/gh/hosts.yml",
        "/h/.config/gcloud/application_default_credentials.json",
        "/h/.config/gcloud/configurations/config_default",
        "/w/ops/kubeconfig",
        "/w/ops/prod-kubeconfig.yaml",
        "/w/gcp/my-service-account-key.json",
        "/w/gcp/service-account.json",
        "/h/.vault-token",
        "/h/.s3cfg",
        "/h/.boto",
        "/h/.my.cnf",
        "/w/krb5/http.keytab",
        "/w/vpn/office.ovpn",
        "/w/.yarnrc",
        "/w/.yarnrc.yml",
        "/h/.terraformrc",
        "/h/terraform.rc",
        "/h/.config/rclone/rclone.conf",
        "/h/.m2/settings.xml",
        "/h/.m2/settings-security.xml",
        "/w/env.production",
        "/w/env.local",
        "/w/env.development",
        "/w/env.staging",
    ],
)
def test_each_built_in_private_pattern_covers_its_files(path: str) -> None:
    assert private(Options(), f"file://{path}")


@pytest.mark.parametrize(
    "path",
    [
        "/w/migrations/env.py",  # Alembic's: code, not secrets
        "/w/environment.py",
        "/w/pom/settings.xml",  # a settings.xml outside ~/.m2
        "/w/kube/deploy.py",
        "/w/docs/service.json",
    ],
)
def test_code_named_near_a_private_pattern_is_not_private(path: str) -> None:
    assert not private(Options(), f"file://{path}")


def test_options_that_turn_a_language_off_take_its_chunks_out_of_the_ring() -> None:
    options = Options()
    ring = Neighbours(admits=lambda uri, lang: shareable(options, uri, lang))
    ring.note(
        "file:///w/a.md", ["# a long enough line of markdown text, to be kept"], 0, "markdown"
    )
    assert ring.settle() and ring.chunks("file:///w/main.py")
    options = Options(enabled_languages=("python",))
    assert ring.refilter() and not ring.chunks("file:///w/main.py")


def test_a_file_renamed_to_a_private_name_leaves_the_ring() -> None:
    ring = Neighbours(admits=lambda uri, lang: shareable(Options(), uri, lang))
    ring.note("file:///w/settings.txt", ["TOKEN = 'a long enough value for the ring to keep'"], 0)
    ring.settle()
    ring.rename("file:///w/settings.txt", "file:///w/.env")
    assert ring.chunks("file:///w/main.py") == []
