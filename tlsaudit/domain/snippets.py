"""Server configuration snippets for a Mozilla profile, in the style of Mozilla's SSL Configuration Generator.

Targets: nginx 1.22+ (OpenSSL 1.1.1+), Apache 2.4 mod_ssl (2.4.36+ for TLS 1.3), HAProxy 2.x
(`ssl-default-bind-curves` needs 2.8+) and Caddy 2 for HTTPS; Postfix 3.6+ for SMTP and Dovecot 2.3
for IMAP and POP3. A service with no snippet here (FTP, XMPP, LDAP, PostgreSQL) gets none rather
than a web server's, whose HSTS line would mean nothing to it. Paths are placeholders the owner replaces.
When scan facts are given, the host name goes into the snippet and a note warns when the
deployed certificate does not suit the profile.
"""

from __future__ import annotations

from tlsaudit.domain.mozilla import GUIDELINES_VERSION, HYBRID_GROUP, Profile, get_profile
from tlsaudit.domain.scanfacts import OK, ScanFacts
from tlsaudit.domain.services import HTTPS

SERVERS = ("nginx", "apache", "haproxy", "caddy")
HSTS_MAX_AGE = 63072000  # two years, Mozilla's value

_PROTOCOL_WORDS = {
    # ScanFacts name -> (nginx, apache, caddy)
    "TLSv1.0": ("TLSv1", "TLSv1", "tls1.0"),
    "TLSv1.1": ("TLSv1.1", "TLSv1.1", "tls1.1"),
    "TLSv1.2": ("TLSv1.2", "TLSv1.2", "tls1.2"),
    "TLSv1.3": ("TLSv1.3", "TLSv1.3", "tls1.3"),
}
_CADDY_CURVES = {"X25519MLKEM768": "x25519mlkem768", "X25519": "x25519", "prime256v1": "secp256r1",
                 "secp384r1": "secp384r1"}


MAIL_SERVERS = {"smtp": "postfix", "smtps": "postfix", "imap": "dovecot", "imaps": "dovecot",
                "pop3": "dovecot", "pop3s": "dovecot"}


def config_snippets(profile: str, facts: ScanFacts | None = None) -> dict[str, str]:
    """{"nginx": ..., "apache": ..., "haproxy": ..., "caddy": ...} for the Mozilla `profile`; for a mail
    service {"postfix": ...} or {"dovecot": ...}; for another service that is not HTTPS, {}."""
    p = get_profile(profile)
    host = facts.host if facts else "example.com"
    notes = _notes(p, facts) + _hybrid_notes(p, facts)
    service = facts.service if facts else HTTPS
    if service != HTTPS:
        return _mail_snippets(p, service, notes)
    return {
        "nginx": _nginx(p, host, notes),
        "apache": _apache(p, host, notes),
        "haproxy": _haproxy(p, notes),
        "caddy": _caddy(p, host, notes),
    }


def _notes(p: Profile, facts: ScanFacts | None) -> list[str]:
    """Warnings about the deployed certificate that no server directive can fix."""
    if not facts or not facts.certificates:
        return []
    types = {"ecdsa" if d.leaf.key_type == "EC" else d.leaf.key_type.lower() for d in facts.certificates}
    notes = []
    if not types & set(p.certificate_types):
        wanted = " or ".join("ECDSA" if t == "ecdsa" else t.upper() for t in p.certificate_types)
        notes.append(f"NOTE: the {p.name} profile needs an {wanted} certificate; "
                     f"{facts.host} serves {', '.join(sorted(t.upper() for t in types))}.")
    return notes


def _hybrid_notes(p: Profile, facts: ScanFacts | None) -> list[str]:
    """What the scan says about the hybrid group the profile puts first (the library is not visible)."""
    pq = facts.post_quantum if facts else None
    if HYBRID_GROUP not in p.tls_curves or pq is None or not pq.check.tested:
        return []
    if pq.check.status == OK and HYBRID_GROUP in pq.accepted:
        return [f"{facts.host} already negotiates {HYBRID_GROUP}: its TLS library has it."]
    return [f"{facts.host} does not negotiate {HYBRID_GROUP} today: if the server refuses the groups line "
            "below, its TLS library predates OpenSSL 3.5; use the line without it."]


def _groups(p: Profile, directive: str, separator: str = ":", indent: str = "", end: str = "") -> list[str]:
    """The profile's groups, hybrid first as Mozilla 6.0 has them, and the line for older libraries."""
    lines = [f"{indent}{directive}{separator.join(p.tls_curves)}{end}"]
    if p.classical_curves != p.tls_curves:
        lines += [f"{indent}# {HYBRID_GROUP} needs OpenSSL 3.5+ (Debian 13); OpenSSL 3.0 (Debian 12, "
                  "Ubuntu 24.04) refuses the name and the server will not start. There, instead:",
                  f"{indent}# {directive}{separator.join(p.classical_curves)}{end}"]
    return lines


def _header(p: Profile, server: str, notes: list[str], comment: str = "#") -> list[str]:
    lines = [f"{comment} Mozilla Guideline v{GUIDELINES_VERSION}, {server}, {p.name} configuration",
             f"{comment} oldest compatible clients: {', '.join(p.oldest_clients)}"]
    lines += [f"{comment} {n}" for n in notes]
    return lines


def _dh_hint(p: Profile) -> str | None:
    if not any(s.startswith("DHE-") for s in p.ciphers_openssl):
        return None
    return "curl https://ssl-config.mozilla.org/ffdhe2048.txt > /path/to/dhparam"


def _min_version(p: Profile) -> str:
    return p.tls_versions[0]


# --- nginx -------------------------------------------------------------------------------------

def _nginx(p: Profile, host: str, notes: list[str]) -> str:
    protocols = " ".join(_PROTOCOL_WORDS[v][0] for v in p.tls_versions)
    lines = _header(p, "nginx 1.22+", notes) + [
        "server {",
        "    listen 80;",
        "    listen [::]:80;",
        f"    server_name {host};",
        "    return 301 https://$host$request_uri;",
        "}",
        "",
        "server {",
        "    # on nginx 1.25.1+ prefer 'listen 443 ssl;' plus 'http2 on;'",
        "    listen 443 ssl http2;",
        "    listen [::]:443 ssl http2;",
        f"    server_name {host};",
        "",
        "    ssl_certificate /path/to/signed_cert_plus_intermediates;",
        "    ssl_certificate_key /path/to/private_key;",
        "    ssl_session_timeout 1d;",
        "    ssl_session_cache shared:MozSSL:10m;  # about 40000 sessions",
        "    ssl_session_tickets off;",
        "",
    ]
    hint = _dh_hint(p)
    if hint:
        lines += [f"    # {hint}", "    ssl_dhparam /path/to/dhparam;", ""]
    lines += [
        f"    # {p.name} configuration",
        f"    ssl_protocols {protocols};",
        *_groups(p, "ssl_ecdh_curve ", indent="    ", end=";"),
    ]
    if p.ciphers_openssl:
        lines.append(f"    ssl_ciphers {':'.join(p.ciphers_openssl)};")
    lines += [
        f"    ssl_conf_command Ciphersuites {':'.join(p.ciphersuites)};",
        f"    ssl_prefer_server_ciphers {'on' if p.server_preferred_order else 'off'};",
        "",
        f"    # HSTS (ngx_http_headers_module is required) ({HSTS_MAX_AGE} seconds)",
        f'    add_header Strict-Transport-Security "max-age={HSTS_MAX_AGE}" always;',
        "",
        "    # OCSP stapling",
        "    ssl_stapling on;",
        "    ssl_stapling_verify on;",
        "    # verify chain of trust of OCSP response using Root CA and Intermediate certs",
        "    ssl_trusted_certificate /path/to/root_CA_cert_plus_intermediates;",
        "    # replace with the IP address of your resolver",
        "    resolver 127.0.0.1;",
        "}",
    ]
    return "\n".join(lines) + "\n"


# --- Apache ------------------------------------------------------------------------------------

def _apache_protocols(p: Profile) -> str:
    return "-all " + " ".join("+" + _PROTOCOL_WORDS[v][1] for v in p.tls_versions)


def _apache(p: Profile, host: str, notes: list[str]) -> str:
    lines = _header(p, "Apache 2.4.36+ (mod_ssl)", notes) + [
        "# this configuration requires mod_ssl, mod_socache_shmcb, mod_rewrite, and mod_headers",
        "<VirtualHost *:80>",
        f"    ServerName {host}",
        "    RewriteEngine On",
        "    RewriteCond %{REQUEST_URI} !^/\\.well\\-known/acme\\-challenge/",
        "    RewriteRule ^(.*)$ https://%{HTTP_HOST}$1 [R=301,L]",
        "</VirtualHost>",
        "",
        "<VirtualHost *:443>",
        f"    ServerName {host}",
        "    SSLEngine on",
        "    SSLCertificateFile      /path/to/signed_cert_and_intermediate_certs",
        "    SSLCertificateKeyFile   /path/to/private_key",
        "",
        "    # enable HTTP/2, if available",
        "    Protocols h2 http/1.1",
        "",
        f"    # HTTP Strict Transport Security (mod_headers is required) ({HSTS_MAX_AGE} seconds)",
        f'    Header always set Strict-Transport-Security "max-age={HSTS_MAX_AGE}"',
        "</VirtualHost>",
        "",
        f"# {p.name} configuration",
        f"SSLProtocol             {_apache_protocols(p)}",
        *_groups(p, "SSLOpenSSLConfCmd       Curves "),
    ]
    if p.ciphers_openssl:
        lines.append(f"SSLCipherSuite          {':'.join(p.ciphers_openssl)}")
    lines += [
        f"SSLCipherSuite          TLSv1.3 {':'.join(p.ciphersuites)}",
        f"SSLHonorCipherOrder     {'on' if p.server_preferred_order else 'off'}",
        "SSLSessionTickets       off",
    ]
    hint = _dh_hint(p)
    if hint:
        lines += ["", f"# {hint}", 'SSLOpenSSLConfCmd       DHParameters "/path/to/dhparam"']
    lines += [
        "",
        "SSLUseStapling On",
        'SSLStaplingCache "shmcb:logs/ssl_stapling(32768)"',
    ]
    return "\n".join(lines) + "\n"


# --- HAProxy -----------------------------------------------------------------------------------

def _haproxy(p: Profile, notes: list[str]) -> str:
    bind_options = ["prefer-client-ciphers"] if not p.server_preferred_order else []
    bind_options += [f"ssl-min-ver {_min_version(p)}", "no-tls-tickets"]
    server_options = [f"ssl-min-ver {_min_version(p)}", "no-tls-tickets"]
    lines = _header(p, "HAProxy 2.x", notes) + [
        "global",
        f"    # {p.name} configuration",
        "    # ssl-default-bind-curves needs HAProxy 2.8+; drop the line on older 2.x",
        *_groups(p, "ssl-default-bind-curves ", indent="    "),
    ]
    if p.ciphers_openssl:
        lines.append(f"    ssl-default-bind-ciphers {':'.join(p.ciphers_openssl)}")
    lines += [
        f"    ssl-default-bind-ciphersuites {':'.join(p.ciphersuites)}",
        f"    ssl-default-bind-options {' '.join(bind_options)}",
        "",
    ]
    if p.ciphers_openssl:
        lines.append(f"    ssl-default-server-ciphers {':'.join(p.ciphers_openssl)}")
    lines += [
        f"    ssl-default-server-ciphersuites {':'.join(p.ciphersuites)}",
        f"    ssl-default-server-options {' '.join(server_options)}",
    ]
    hint = _dh_hint(p)
    if hint:
        lines += ["", f"    # {hint}", "    ssl-dh-param-file /path/to/dhparam"]
    lines += [
        "",
        "frontend ft_https",
        "    mode    http",
        "    # OCSP stapling: put the response in /path/to/cert.pem.ocsp, or on 2.8+ use a crt-list",
        "    # line with [ocsp-update on]",
        "    bind    :443 ssl crt /path/to/<cert+privkey+intermediate> alpn h2,http/1.1",
        "    bind    :80",
        "    redirect scheme https code 301 if !{ ssl_fc }",
        "",
        f"    # HSTS ({HSTS_MAX_AGE} seconds)",
        f"    http-response set-header Strict-Transport-Security max-age={HSTS_MAX_AGE}",
    ]
    return "\n".join(lines) + "\n"


# --- Caddy -------------------------------------------------------------------------------------

def _caddy(p: Profile, host: str, notes: list[str]) -> str:
    # Caddy 2 accepts only tls1.2 and tls1.3 (it dropped TLS 1.0/1.1).
    words = [_PROTOCOL_WORDS[v][2] for v in p.tls_versions if v in ("TLSv1.2", "TLSv1.3")]
    protocols = words[0] if len(words) == 1 else f"{words[0]} {words[-1]}"
    lines = _header(p, "Caddy 2", notes) + [
        "# Caddy staples OCSP, redirects HTTP to HTTPS and rotates session ticket keys by itself.",
        "# TLS 1.3 suites cannot be configured in Go; its defaults are the profile's three suites.",
    ]
    if len(words) < len(p.tls_versions):
        lines.append("# Caddy 2 cannot serve TLS 1.0/1.1: clients that need them must use another server.")
    lines += [
        f"{host} {{",
        "    tls {",
        f"        protocols {protocols}",
    ]
    if p.ciphers_iana:
        lines.append(f"        ciphers {' '.join(p.ciphers_iana)}")
    lines += [
        "        # x25519mlkem768 needs Caddy 2.10+ (Go 1.24); drop it on older Caddy",
        f"        curves {' '.join(_CADDY_CURVES[c] for c in p.tls_curves)}",
        "    }",
        f'    header Strict-Transport-Security "max-age={HSTS_MAX_AGE}"',
        "}",
    ]
    return "\n".join(lines) + "\n"


# --- mail servers ------------------------------------------------------------------------

def _mail_snippets(p: Profile, service: str, notes: list[str]) -> dict[str, str]:
    server = MAIL_SERVERS.get(service)
    if server == "postfix":
        return {"postfix": _postfix(p, service, notes)}
    if server == "dovecot":
        return {"dovecot": _dovecot(p, notes)}
    return {}


def _postfix(p: Profile, service: str, notes: list[str]) -> str:
    lines = _header(p, "Postfix 3.6+ (main.cf)", notes) + [
        "smtpd_tls_chain_files = /path/to/private_key, /path/to/signed_cert_plus_intermediates",
        "smtpd_tls_security_level = may",
        "smtpd_tls_auth_only = yes",
        f"smtpd_tls_protocols = >={_PROTOCOL_WORDS[_min_version(p)][0]}",
        f"smtpd_tls_mandatory_protocols = >={_PROTOCOL_WORDS[_min_version(p)][0]}",
    ]
    if p.ciphers_openssl:
        lines += ["smtpd_tls_ciphers = medium", "smtpd_tls_mandatory_ciphers = medium",
                  f"tls_medium_cipherlist = {':'.join(p.ciphers_openssl)}"]
    lines += [f"tls_preempt_cipherlist = {'yes' if p.server_preferred_order else 'no'}",
              *_groups(p, "tls_eecdh_auto_curves = ", separator=" ")]
    if _dh_hint(p):
        lines += [f"# {_dh_hint(p)}", "smtpd_tls_dh1024_param_file = /path/to/dhparam"]
    if service == "smtps":
        lines += ["# SMTPS (port 465): in master.cf, the submissions service takes",
                  "#   -o smtpd_tls_wrappermode=yes"]
    return "\n".join(lines) + "\n"


def _dovecot(p: Profile, notes: list[str]) -> str:
    lines = _header(p, "Dovecot 2.3 (conf.d/10-ssl.conf)", notes) + [
        "ssl = required",
        "ssl_cert = </path/to/signed_cert_plus_intermediates",
        "ssl_key = </path/to/private_key",
        f"ssl_min_protocol = {_PROTOCOL_WORDS[_min_version(p)][0]}",
        *_groups(p, "ssl_curve_list = "),
    ]
    if p.ciphers_openssl:
        lines.append(f"ssl_cipher_list = {':'.join(p.ciphers_openssl)}")
    lines += [f"ssl_cipher_suites = {':'.join(p.ciphersuites)}",
              f"ssl_prefer_server_ciphers = {'yes' if p.server_preferred_order else 'no'}"]
    if _dh_hint(p):
        lines += [f"# {_dh_hint(p)}", "ssl_dh = </path/to/dhparam"]
    return "\n".join(lines) + "\n"
