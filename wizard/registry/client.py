"""Does each image the GPU nodes need exist in the registry, and what is its digest?

An async client for the OCI distribution v2 API on aiohttp (the engine runs on Textual's asyncio
loop). ``HEAD /v2/<repo>/manifests/<tag>`` always carries the full Accept list: without the OCI type
an OCI manifest reads as 404, and without the docker v2 type a v2s2 manifest is down-converted to
schema1 with another digest. Authentication follows the registry's ``WWW-Authenticate`` challenge
(bearer token via realm/service/scope, an identity token exchanged there, or Basic); credentials
and TLS material per registry come from :class:`wizard.registry.access.RegistryAccess` (auth files,
credential helpers, ``certs.d``, ``--registry-ca``). TLS verification is on unless the user lists the
registry as insecure. Every request is one line of the request log (:mod:`wizard.requestlog`). Requests are reads, so 429, 5xx and dropped connections are retried (bounded,
honouring ``Retry-After``; the policy: :mod:`wizard.retry`). No error or log line produced here
contains a credential.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import ssl
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import aiohttp
from multidict import CIMultiDictProxy
from yarl import URL

from wizard import requestlog
from wizard.engine.naming import image_repository, split_reference
from wizard.engine.registry_routes import AccessNote
from wizard.engine.results import CallStats
from wizard.registry.access import AccessError, RegistryAccess
from wizard.registry.auth import (
    Challenge,
    Credentials,
    canonical_host,
    endpoint_host,
    load_auth_file,
    load_auth_sources,
    normalize_auth_key,
    parse_challenge,
    scrub,
)
from wizard.registry.distribution import MANIFEST_ACCEPT, MANIFEST_MEDIA_TYPES, json_object, next_link, registry_message
from wizard.registry.hostconfig import EndpointTrust
from wizard.registry.status import RegistryError, TagStatus, os_reason
from wizard.retry import DROPS, REGISTRY_FETCH, Retryable, dropped, retry_after_seconds, retryable_status, retrying

__all__ = ["MANIFEST_MEDIA_TYPES", "Credentials", "RegistryClient", "RegistryError", "TagStatus", "load_auth_file"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Response:
    status: int
    headers: CIMultiDictProxy[str]
    body: bytes


class RegistryClient:
    """Async OCI registry client; use as ``async with RegistryClient(...) as client``.

    Credentials given here win over those of ``auth_file`` (or, when it is None, of the usual
    docker/containers auth files); keys are ``host`` or ``host/repository-prefix``. Registries in
    ``insecure_registries`` are reached over unverified https, falling back to plain http, and a
    warning is recorded in :attr:`warnings`. ValueError (naming the file, never its content) when
    an explicit ``auth_file`` cannot be read. ``mirrors`` maps a registry host to the endpoint that
    answers for it (``host[:port][/prefix]``, a pull-through cache or the demo cluster's registry);
    ``ca_file`` and ``ca_files`` (PEM files, ``--registry-ca``) and ``ca_data`` (PEM text, e.g. a
    kubeconfig's CA) add CAs to trust everywhere; ``certs_dirs`` replaces the ``certs.d`` roots
    (``[]``: none) and ``endpoint_trust`` gives endpoints their hosts.toml CAs and client certificates.
    ``credential_helpers`` False leaves the helpers the auth files name unrun. ``route_origins`` (host ->
    where its mirror was declared), ``insecure_origins`` and ``notes`` (configuration entries skipped)
    feed :meth:`access_notes`.
    """

    def __init__(
        self,
        *,
        credentials: dict[str, Credentials] | None = None,
        auth_file: str | None = None,
        insecure_registries: Iterable[str] = (),
        timeout: float = 10.0,
        concurrency: int = 16,
        mirrors: Mapping[str, str] | None = None,
        ca_file: str | None = None,
        ca_data: str | None = None,
        ca_files: Sequence[str] = (),
        certs_dirs: Sequence[Path] | None = None,
        endpoint_trust: Mapping[str, EndpointTrust] | None = None,
        credential_helpers: bool = True,
        route_origins: Mapping[str, str] | None = None,
        insecure_origins: Mapping[str, str] | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        sources = load_auth_sources(auth_file)
        for key, creds in (credentials or {}).items():
            sources.credentials[normalize_auth_key(key)] = creds
            sources.origins[normalize_auth_key(key)] = "credentials given to the wizard"
        if not credential_helpers:
            sources.helpers.clear()
            sources.store = None
        self.access = RegistryAccess(
            sources,
            ca_files=[*([ca_file] if ca_file else []), *ca_files],
            ca_data=ca_data,
            certs_dirs=certs_dirs,
            endpoint_trust=endpoint_trust,
            route_origins={canonical_host(h): o for h, o in (route_origins or {}).items()},
            insecure_origins=insecure_origins,
            notes=notes,
        )
        self._credentials = sources.credentials
        self._insecure = {canonical_host(h) for h in insecure_registries if h.strip()}
        # Like registries.conf `location`: a host answered by another endpoint, optionally under a prefix.
        self._mirrors = {canonical_host(h): loc.strip("/") for h, loc in (mirrors or {}).items()}
        self._ssl: ssl.SSLContext | bool = True
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._timeout_s = timeout
        self._concurrency = max(1, concurrency)
        self._semaphore = asyncio.Semaphore(self._concurrency)
        self._session: aiohttp.ClientSession | None = None
        self._base_urls: dict[str, str] = {}
        self._challenges: dict[str, Challenge] = {}
        self._tokens: dict[tuple[str, str], tuple[str, float]] = {}
        self._locks: dict[object, asyncio.Lock] = {}
        self.stats = CallStats()
        """Requests sent and retries made (every attempt counts as a request)."""
        self.warnings: list[str] = [
            f"TLS verification is off for {host}: its identity is not checked (listed as insecure)"
            for host in sorted(self._insecure)
        ]
        for warning in self.warnings:
            log.warning(warning)

    async def __aenter__(self) -> RegistryClient:
        await self.access.open()  # in a thread: the first build loads the system's CA store
        self._ssl = self.access.default_tls
        self._session = aiohttp.ClientSession(
            timeout=self._timeout,
            connector=aiohttp.TCPConnector(limit=self._concurrency),
            trust_env=True,  # honour HTTPS_PROXY/NO_PROXY as skopeo does
        )
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- public API ---------------------------------------------------------------------------------

    async def check(self, reference: str) -> TagStatus:
        """HEAD the manifest of ``reference``: exists or not, its digest and media type, or an error."""
        try:
            host, repo, tag = split_reference(reference)
        except ValueError as exc:
            return TagStatus(reference, False, error=f"invalid reference: {exc}")
        host, repo = self._route(host, repo)
        async with self._semaphore:
            try:
                path = f"/v2/{repo}/manifests/{tag}"
                resp = await self._send("HEAD", host, repo, path, {"Accept": MANIFEST_ACCEPT})
                if resp.status == 200:
                    digest = resp.headers.get("Docker-Content-Digest", "")
                    if not digest:  # some registries omit it on HEAD: hash the manifest itself
                        full = await self._send("GET", host, repo, path, {"Accept": MANIFEST_ACCEPT})
                        digest = "sha256:" + hashlib.sha256(full.body).hexdigest()
                    media = resp.headers.get("Content-Type", "").split(";", 1)[0].strip()
                    return TagStatus(reference, True, digest=digest, media_type=media)
                if resp.status == 404:
                    return TagStatus(reference, False)
                return TagStatus(reference, False, error=self._status_error(resp, host, repo))
            except RegistryError as exc:
                return TagStatus(reference, False, error=str(exc))

    async def check_many(self, references: Iterable[str]) -> dict[str, TagStatus]:
        """:meth:`check` for many references at once (at most ``concurrency`` in flight), input order kept."""
        unique = list(dict.fromkeys(references))
        results = await asyncio.gather(*(self.check(ref) for ref in unique))
        return dict(zip(unique, results, strict=True))

    async def list_tags(self, repository_ref: str, *, limit: int | None = None) -> list[str]:
        """All tags of a repository (``host/path/name``; a tag in it is ignored); ``[]`` if it does not exist.
        ``limit``: at most that many (the pages stop there), for a listing that must stay bounded.

        Raises RegistryError when the registry cannot be asked (auth, network, server error).
        """
        try:
            host, repo, _ = split_reference(repository_ref)
        except ValueError as exc:
            raise RegistryError(f"invalid reference: {exc}") from None
        host, repo = self._route(host, repo)
        tags: list[str] = []
        path: str | None = f"/v2/{repo}/tags/list?n={min(1000, limit) if limit else 1000}"
        async with self._semaphore:
            while path:
                resp = await self._send("GET", host, repo, path, {"Accept": "application/json"})
                if resp.status == 404:
                    return tags
                if resp.status != 200:
                    raise RegistryError(self._status_error(resp, host, repo))
                try:
                    data = json_object(resp.body)
                    tags.extend(t for t in data.get("tags") or [] if isinstance(t, str))
                except (ValueError, AttributeError):
                    raise RegistryError(f"registry error: {host} sent a tag list that is not JSON") from None
                path = next_link(resp.headers.get("Link", ""))
                if limit is not None and len(tags) >= limit:
                    return tags[:limit]
        return tags

    async def repositories(self, host: str, limit: int = 5000) -> list[str]:
        """The repositories ``host`` lists (``/v2/_catalog``, through its mirror when one is routed), as ``host/path``.

        Many registries refuse to list (401, 403, 404): that is an empty answer, not an error. A mirror
        serving several hosts under path prefixes lists only ``host``'s. At most ``limit`` names.
        """
        endpoint, prefix = self._route(host, "")
        prefix = prefix.strip("/")
        found: list[str] = []
        path: str | None = "/v2/_catalog?n=1000"
        async with self._semaphore:
            while path and len(found) < limit:
                try:
                    resp = await self._send("GET", endpoint, "", path, {"Accept": "application/json"})
                except RegistryError:
                    return found
                if resp.status != 200:
                    return found
                try:
                    names = json_object(resp.body).get("repositories") or []
                except (ValueError, AttributeError):
                    return found
                for name in names:
                    if not isinstance(name, str):
                        continue
                    if prefix and not name.startswith(prefix + "/"):
                        continue
                    found.append(image_repository(host, name[len(prefix) + 1 :] if prefix else name))
                path = next_link(resp.headers.get("Link", ""))
        return found[:limit]

    def access_notes(self, hosts: Iterable[str]) -> list[AccessNote]:
        """How the checks of ``hosts`` reach their registries and where each setting came from: the mirror,
        the credentials (by user name; helpers not yet asked are named, not run), the TLS material, and
        the configuration entries that were skipped. Never a secret."""
        routes = {host: self._mirrors[canonical_host(host)] for host in hosts if canonical_host(host) in self._mirrors}
        return self.access.notes(hosts, routes, self._insecure)

    # -- transport ----------------------------------------------------------------------------------

    def _route(self, host: str, repo: str) -> tuple[str, str]:
        """The endpoint host and repository path that answer for ``host/repo`` (mirrors applied)."""
        location = self._mirrors.get(canonical_host(host))
        if not location:
            return host, repo
        endpoint, _, prefix = location.partition("/")
        return endpoint, f"{prefix}/{repo}" if prefix else repo

    def _lock(self, key: object) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    def _scrub(self, text: str) -> str:
        return scrub(text, [*self.access.secrets(), *(tok for tok, _ in self._tokens.values())])

    async def _send(self, method: str, host: str, repo: str, path: str, headers: dict[str, str]) -> _Response:
        """One request with auth: cached credentials first, then the challenge flow after a 401."""
        base = await self._base_url(host)
        auth = await self._cached_auth(host, repo)
        resp = await self._fetch(method, base + path, host, {**headers, **auth})
        if resp.status != 401:
            return resp
        challenge = parse_challenge(resp.headers.get("WWW-Authenticate", ""))
        if challenge is None or challenge.scheme not in {"basic", "bearer"}:
            raise RegistryError(f"unauthorized: {host} asks for an authentication scheme the wizard cannot use")
        self._challenges[canonical_host(host)] = challenge
        auth = await self._authorize(host, repo, challenge, refresh=bool(auth))
        resp = await self._fetch(method, base + path, host, {**headers, **auth})
        if resp.status == 401:
            who = self.access.known(host, repo)
            detail = self._scrub(registry_message(resp.body))
            raise RegistryError(
                f"unauthorized: {host} refused access to {repo}"
                + (
                    f" for user {who.username} (from {self.access.origin(host, repo)})"
                    if who
                    else " without credentials (private, or no such repository)"
                )
                + (f" ({detail})" if detail else "")
            )
        return resp

    async def _base_url(self, host: str) -> str:
        canonical = canonical_host(host)
        if canonical not in self._insecure:
            return f"https://{endpoint_host(host)}"
        async with self._lock(("base", canonical)):
            if canonical not in self._base_urls:
                self._base_urls[canonical] = await self._probe_insecure(endpoint_host(host))
            return self._base_urls[canonical]

    async def _probe_insecure(self, host: str) -> str:
        """Unverified https if the host speaks TLS at all, else plain http (what skopeo does too)."""
        assert self._session is not None, "use RegistryClient as an async context manager"
        try:
            async with self._session.get(f"https://{host}/v2/", ssl=False) as resp:
                await resp.read()
            return f"https://{host}"
        except (aiohttp.ClientError, TimeoutError):
            return f"http://{host}"

    async def _fetch(
        self, method: str, url: str, host: str, headers: dict[str, str], data: bytes | None = None
    ) -> _Response:
        """One HTTP exchange with bounded retries on 429/5xx; network failures become RegistryError.

        ``host`` is the registry the exchange is for: its insecure setting also covers its token service.
        The endpoint's own TLS material (certs.d, hosts.toml) is that of the URL's host.
        """
        session = self._session
        if session is None:
            raise RuntimeError("use RegistryClient as an async context manager")
        if canonical_host(host) in self._insecure:
            verify: ssl.SSLContext | bool = False
        else:
            try:
                verify = await self.access.tls(URL(url).raw_authority or host)
            except AccessError as exc:
                raise RegistryError(f"TLS settings for {host}: {exc}") from None
        started, attempts, status = time.monotonic(), [0], ["error"]

        async def attempt() -> _Response:
            self.stats.requests += 1
            attempts[0] += 1
            try:
                async with session.request(method, url, headers=headers, data=data, ssl=verify) as resp:
                    status[0] = str(resp.status)
                    body = await resp.read() if method != "HEAD" else b""
                    result = _Response(resp.status, resp.headers, body)
            except aiohttp.ClientConnectorCertificateError as exc:
                raise RegistryError(
                    f"TLS verification failed for {host}: {self._scrub(str(exc.certificate_error))}; "
                    "list it as an insecure registry only if you trust it"
                ) from None
            except aiohttp.ClientSSLError as exc:
                if "WRONG_VERSION_NUMBER" in str(exc):
                    raise RegistryError(
                        f"TLS error talking to {host}: it does not speak https (plain http?); "
                        "list it as an insecure registry only if you trust it"
                    ) from None
                raise RegistryError(f"TLS error talking to {host}: {self._scrub(str(exc))}") from None
            except aiohttp.ClientConnectorError as exc:
                raise RegistryError(f"registry unreachable: {host}: {os_reason(exc.os_error)}") from None
            except TimeoutError:
                raise RegistryError(f"registry unreachable: {host}: no answer within {self._timeout_s:g} s") from None
            except (aiohttp.ClientError, *DROPS) as exc:
                if dropped(exc):  # the connection broke mid-exchange: a read is simply asked again
                    reason = f"connection dropped ({type(exc).__name__})"
                    raise Retryable(RegistryError(f"registry unreachable: {host}: {reason}")) from None
                raise RegistryError(f"registry unreachable: {host}: {self._scrub(str(exc))}") from None
            if retryable_status(result.status, safe=True):  # the last such answer is worded by the caller
                raise Retryable(result, retry_after=retry_after_seconds(result.headers))
            return result

        try:
            return await retrying(REGISTRY_FETCH, attempt, stats=self.stats)
        finally:
            if requestlog.enabled():
                requestlog.record("registry", method, url, status[0], started, attempts[0] - 1)

    # -- authentication -----------------------------------------------------------------------------

    async def _cached_auth(self, host: str, repo: str) -> dict[str, str]:
        """An Authorization header from what earlier challenges taught us about this host, if any."""
        challenge = self._challenges.get(canonical_host(host))
        if challenge is None:
            return {}
        if challenge.scheme == "basic":
            creds = await self._credentials_for(host, repo)
            return {"Authorization": creds.basic()} if creds and creds.password else {}
        return await self._authorize(host, repo, challenge, refresh=False)

    async def _credentials_for(self, host: str, repo: str) -> Credentials | None:
        try:
            return await self.access.credentials(host, repo)
        except AccessError as exc:
            raise RegistryError(f"unauthorized: {host}: {exc}") from None

    async def _authorize(self, host: str, repo: str, challenge: Challenge, *, refresh: bool) -> dict[str, str]:
        creds = await self._credentials_for(host, repo)
        if challenge.scheme == "basic":
            if creds is None:
                raise RegistryError(
                    f"unauthorized: {host} requires credentials and none were found for it "
                    "(give them to the wizard or log in with `skopeo login` / `docker login`)"
                )
            if not creds.password:
                raise RegistryError(
                    f"unauthorized: {host} asks for a password and {self.access.origin(host, repo)} holds only an "
                    "identity token (it works with a token service only); log in again with a password"
                )
            return {"Authorization": creds.basic()}
        scope = f"repository:{repo}:pull"
        key = (canonical_host(host), scope)
        async with self._lock(("token", key)):
            cached = self._tokens.get(key)
            if cached and not refresh and cached[1] > time.monotonic():
                return {"Authorization": f"Bearer {cached[0]}"}
            token, lifetime = await self._fetch_token(host, challenge, scope, creds)
            self._tokens[key] = (token, time.monotonic() + max(lifetime - 10.0, 1.0))
            return {"Authorization": f"Bearer {token}"}

    async def _fetch_token(
        self, host: str, challenge: Challenge, scope: str, creds: Credentials | None
    ) -> tuple[str, float]:
        realm = challenge.params.get("realm", "")
        if not realm.startswith(("https://", "http://")):
            raise RegistryError(f"unauthorized: {host} sent a token challenge without a usable realm")
        if realm.startswith("http://") and creds and canonical_host(host) not in self._insecure:
            raise RegistryError(
                f"unauthorized: {host} wants credentials sent to a plain-http token service; refused "
                "(list the registry as insecure only if you trust that network)"
            )
        params = {"scope": scope}
        if service := challenge.params.get("service"):
            params["service"] = service
        if creds is not None and creds.identity_token:  # OAuth2 refresh-token grant, as docker does
            form = {**params, "grant_type": "refresh_token", "refresh_token": creds.identity_token}
            form["client_id"] = "gpu-wizard"
            body = str(URL.build(query=form)).lstrip("?").encode()
            headers = {"Content-Type": "application/x-www-form-urlencoded"}
            resp = await self._fetch("POST", realm, host, headers, data=body)
        else:
            headers = {"Authorization": creds.basic()} if creds else {}
            resp = await self._fetch("GET", str(URL(realm).update_query(params)), host, headers)
        if resp.status in {401, 403}:
            raise RegistryError(
                f"unauthorized: the token service of {host} refused "
                + (
                    f"the credentials of user {creds.username} (from {self.access.origin(host, '')})"
                    if creds
                    else "anonymous access; credentials are needed"
                )
            )
        if resp.status != 200:
            raise RegistryError(f"registry error: the token service of {host} answered HTTP {resp.status}")
        try:
            data = json_object(resp.body)
            token = data.get("token") or data.get("access_token")
            lifetime = float(data.get("expires_in") or 60)
        except (ValueError, AttributeError, TypeError):
            token = None
        if not isinstance(token, str) or not token:
            raise RegistryError(f"registry error: the token service of {host} sent no token")
        return token, lifetime

    def _status_error(self, resp: _Response, host: str, repo: str) -> str:
        detail = registry_message(resp.body)
        suffix = f" ({self._scrub(detail)})" if detail else ""
        if resp.status == 403:
            return f"forbidden: {host} denies access to {repo}{suffix}"
        if resp.status == 429:
            return f"registry error: {host} keeps answering 429 Too Many Requests; try again later"
        return f"registry error: {host} answered HTTP {resp.status} for {repo}{suffix}"
