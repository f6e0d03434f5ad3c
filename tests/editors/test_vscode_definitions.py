"""VS Code end to end with a second language server: `specLsp.editorDefinitions` on, and the
fake-definitions extension (tests/editors/vscode_fake_definitions, packed here as a .vsix) serving
Python definitions and hovers from tests/editors/fake_definition_server.py. Typing a call of
`rect_area`, which only that server knows, makes the extension send its definition to the real
`spec-lsp serve`, which logs what it kept (the runner: editors/vscode/test/e2e.ts, scenario
"definitions"; the tools as for test_vscode_e2e.py)."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

from tests.editors.test_vscode_e2e import _run_e2e, _tools

HERE = Path(__file__).resolve().parent
EXTENSION = HERE / "vscode_fake_definitions"
FAKE = HERE / "fake_definition_server.py"
CONTENT_TYPES = (
    '<?xml version="1.0" encoding="utf-8"?><Types xmlns="http://schemas.openxmlformats.org/'
    'package/2006/content-types"><Default Extension=".json" ContentType="application/json"/>'
    '<Default Extension=".js" ContentType="application/javascript"/><Default Extension='
    '".vsixmanifest" ContentType="text/xml"/></Types>'
)


def manifest(package: dict[str, str]) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?><PackageManifest Version="2.0.0" '
        'xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011"><Metadata>'
        f'<Identity Language="en-US" Id="{package["name"]}" Version="{package["version"]}" '
        f'Publisher="{package["publisher"]}"/><DisplayName>{package["displayName"]}</DisplayName>'
        '<Description xml:space="preserve">spec-lsp tests</Description><Properties><Property '
        'Id="Microsoft.VisualStudio.Code.Engine" Value="^1.80.0"/></Properties></Metadata>'
        '<Installation><InstallationTarget Id="Microsoft.VisualStudio.Code"/></Installation>'
        '<Dependencies/><Assets><Asset Type="Microsoft.VisualStudio.Code.Manifest" '
        'Path="extension/package.json" Addressable="true"/></Assets></PackageManifest>'
    )


def pack_fake_extension(out: Path) -> Path:
    """The fake-definitions extension as a .vsix (a zip: its manifest and the folder's files)."""
    vsix = out / "fake-definitions.vsix"
    package = json.loads((EXTENSION / "package.json").read_text())
    with zipfile.ZipFile(vsix, "w") as z:
        z.writestr("[Content_Types].xml", CONTENT_TYPES)
        z.writestr("extension.vsixmanifest", manifest(package))
        for name in ("package.json", "extension.js"):
            z.write(EXTENSION / name, f"extension/{name}")
    return vsix


def test_vscode_sends_a_definition_only_the_other_language_server_knows(tmp_path: Path) -> None:
    _tools()  # skips before starting anything when the tools are absent
    fake_log = tmp_path / "asked.jsonl"
    target = tmp_path / "site-packages" / "geometry.py"  # never written: it comes from the editor
    argv = [sys.executable, str(FAKE), "--target", str(target), "--log", str(fake_log)]
    result = _run_e2e(
        "tiny",
        "definitions",
        {
            "SPEC_LSP_E2E_SCENARIO": "definitions",
            "SPEC_LSP_E2E_FAKE_VSIX": str(pack_fake_extension(tmp_path)),
            "SPEC_LSP_FAKE_DEFINITIONS": json.dumps(argv),
            "SPEC_LSP_E2E_FAKE_LOG": str(fake_log),
        },
    )
    seen = result["definitions"]
    # spec-lsp kept what the extension sent for stats.py (the log line the runner waited for)
    assert seen["kept"].endswith("stats.py"), seen
    asked = [json.loads(line) for line in seen["asked"]]
    # the second server was asked about rect_area, for both its definition and its hover
    assert {"method": "textDocument/definition", "name": "rect_area"} in asked, asked
    assert {"method": "textDocument/hover", "name": "rect_area"} in asked, asked
