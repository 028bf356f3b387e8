"""What a suite's case may put in a session's environment (a plugin eval case's ``env:``).

A case is content nobody here wrote. Left free, its env would point the CLI at another server with
the user's key (``ANTHROPIC_BASE_URL``, ``HTTPS_PROXY``), trust another CA, load code into the CLI
(``NODE_OPTIONS``, ``LD_PRELOAD``) or replace its configuration (``CLAUDE_CONFIG_DIR``). So a case
may set only: the CLI behaviour switches in :data:`CLI_SWITCHES`, and variables of its own, named in
capitals outside every family the host, the CLIs, interpreters, loaders, version control, clouds
and skillab read (:data:`RESERVED_PREFIXES`, :data:`RESERVED`) and carrying no credential-like word.
Anything else refuses the case before any session starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from executors.sandbox import secret_name

#: Claude Code switches that change how a session behaves, not where it connects or what it loads.
CLI_SWITCHES = frozenset(
    {
        "MAX_THINKING_TOKENS",
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
        "BASH_DEFAULT_TIMEOUT_MS",
        "BASH_MAX_TIMEOUT_MS",
        "BASH_MAX_OUTPUT_LENGTH",
        "CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR",
        "MCP_TIMEOUT",
        "MCP_TOOL_TIMEOUT",
        "MAX_MCP_OUTPUT_TOKENS",
        "DISABLE_PROMPT_CACHING",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE",
        "USE_BUILTIN_RIPGREP",
    }
)
RESERVED_PREFIXES = (
    "ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "AWS_", "AZURE_", "VERTEX",
    "CLOUD_ML_", "NODE_", "NPM_", "BUN_", "DENO_", "PYTHON", "PIP_", "UV_", "LD_", "DYLD_", "GIT_",
    "SSH_", "GPG_", "GNUPG", "XDG_", "DISABLE_", "DOCKER_", "KUBE", "PREFECT_", "SKILLAB_", "OTEL_",
    "BASH_", "HTTP", "HTTPS", "ALL_PROXY", "NO_PROXY", "FTP_", "SSL_", "REQUESTS_", "CURL_", "JAVA",
    "_JAVA", "MAVEN_", "GRADLE_", "CARGO_", "RUST", "GOPATH", "GOFLAGS", "GOROOT", "GOPROXY", "GOBIN", "GOCACHE", "GOMODCACHE", "GOENV", "GOPRIVATE", "GONOSUMDB", "PERL", "RUBY", "GEM_", "LC_", "LANG",
    "MCP_", "IS_SANDBOX", "GITHUB_", "GH_", "COPILOT_", "OPENCODE_", "OLLAMA_", "HF_", "HUGGING",
    "OPENSSL", "GCONV", "GLIBC", "MALLOC", "LOCPATH", "NLSPATH", "SHELLOPTS", "BASHOPTS", "ZDOTDIR",
    "TERMINFO", "HOSTALIASES", "RES_OPTIONS", "TZDIR", "GIO_", "GTK_", "QT_", "DBUS_", "SYSTEMD_",
)  # fmt: skip
RESERVED = frozenset(
    {
        "PATH", "HOME", "TMPDIR", "TMP", "TEMP", "SHELL", "ENV", "USER", "LOGNAME", "PWD", "OLDPWD",
        "CI", "NO_COLOR", "TERM", "TZ", "HOSTNAME", "EDITOR", "VISUAL", "PAGER", "PS1", "PS4",
        "PROMPT_COMMAND", "IFS", "CDPATH", "GLOBIGNORE", "CLASSPATH", "BROWSER", "DISPLAY",
        "SHLVL", "MAIL", "INPUTRC", "TERMINFO", "MANPATH", "INFOPATH", "NIX_PATH",
    }
)  # fmt: skip
NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def refusal(name: str) -> str | None:
    """Why a case may not set ``name`` (None when it may)."""
    if name in CLI_SWITCHES:
        return None
    if not NAME.fullmatch(name):
        return "a case's own variables are named in capitals, digits and '_'"
    if name in RESERVED or name.startswith(RESERVED_PREFIXES):
        return "the host, the agent CLI or skillab reads it (an endpoint, proxy, key, loader or setting)"
    if secret_name(name):
        return "its name says credential, endpoint, proxy, CA, loader or configuration"
    return None


def case_env(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The pairs a case may set (the loader refused the others before any session started)."""
    return {k: v for k, v in pairs if refusal(k) is None}
