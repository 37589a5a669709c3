"""Translate one parsed API request (route, verb, query, body) into store calls and a reply.

This is the API server's "endpoint" layer: query parameters and request bodies in, status code
and response document out. It knows nothing about sockets, so the HTTP handler stays about
framing and the store stays about semantics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from internal.fakekube import errors
from internal.fakekube.auth import AccessReviews, TokenReviews
from internal.fakekube.errors import ApiError
from internal.fakekube.listing import Page
from internal.fakekube.resources import CRDS_QUALIFIED, ResourceTable, ResourceType
from internal.fakekube.routing import Route
from internal.fakekube.selectors import ObjectFilter, SelectorError, make_filter
from internal.fakekube.store import Store
from internal.fakekube.strategy import require_object, served_as

Obj = dict[str, Any]
Query = Mapping[str, list[str]]
_TYPE_FIELDS = ("kind", "apiVersion")


@dataclass(frozen=True)
class Reply:
    """A response: a status code and either a document or already serialized JSON."""

    code: int
    body: Obj | bytes


def param(query: Query, name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


def flag(query: Query, name: str) -> bool | None:
    value = param(query, name)
    if value is None:
        return None
    return value.lower() in ("1", "true", "yes")


def int_param(query: Query, name: str) -> int | None:
    value = param(query, name)
    if value in (None, ""):
        return None
    try:
        return int(str(value))
    except ValueError as exc:
        raise errors.bad_request(f"invalid {name}: {value!r}") from exc


def object_filter(rt: ResourceType, query: Query) -> ObjectFilter:
    try:
        return make_filter(
            param(query, "labelSelector"), param(query, "fieldSelector"), rt.field_labels
        )
    except SelectorError as exc:
        raise errors.bad_request(str(exc)) from exc


def parse_body(body: bytes) -> Obj:
    if not body:
        raise errors.bad_request("the request body is empty")
    try:
        return require_object(orjson.loads(body))
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc


def list_body(rt: ResourceType, page: Page) -> bytes:
    """A `kind: XList` document; built-in kinds omit kind/apiVersion on items, like the API."""
    meta: Obj = {"resourceVersion": str(page.rv)}
    if page.continue_token is not None:
        meta["continue"] = page.continue_token
    if page.remaining is not None:
        meta["remainingItemCount"] = page.remaining
    items: list[Obj] = [served_as(rt, o) for o in page.items]
    if not rt.custom:
        items = [{k: v for k, v in o.items() if k not in _TYPE_FIELDS} for o in items]
    doc = {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": items}
    return orjson.dumps(doc)


class Operations:
    """Serves resource and review requests against a store."""

    def __init__(
        self,
        store: Store,
        tokens: TokenReviews,
        access: AccessReviews,
        resources: ResourceTable | None = None,
    ) -> None:
        self.store = store
        self.tokens = tokens
        self.access = access
        self.resources = resources if resources is not None else ResourceTable()

    def serve(self, route: Route, verb: str, query: Query, body: bytes, content_type: str) -> Reply:
        if route.review is not None:
            return self._review(route.review, verb, body)
        rt = route.rt
        if rt is None:
            raise errors.route_not_found()
        if verb == "get":
            return Reply(200, served_as(rt, self.store.get(rt, route.namespace, str(route.name))))
        if verb == "list":
            return Reply(200, self._list(rt, route, query))
        if verb == "create":
            return self._create(rt, route, body)
        if verb == "update":
            obj, created = self.store.replace_or_create(
                rt, parse_body(body), route.namespace, str(route.name), route.subresource
            )
            return Reply(201 if created else 200, obj)
        if verb == "patch":
            name = str(route.name)
            sub = route.subresource
            return Reply(
                200,
                self.store.patch(rt, route.namespace, name, content_type, body, subresource=sub),
            )
        if verb == "delete":
            return self._delete(rt, route, body)
        if verb == "deletecollection" and route.subresource is None:
            deleted = self.store.delete_collection(rt, route.namespace, object_filter(rt, query))
            return Reply(200, list_body(rt, Page(deleted, self.store.rv, None, None)))
        raise ApiError(405, "the server does not allow this method on the requested resource")

    def _list(self, rt: ResourceType, route: Route, query: Query) -> bytes:
        if route.subresource is not None:
            raise errors.route_not_found()
        limit = int_param(query, "limit")
        page = self.store.list(
            rt,
            route.namespace,
            object_filter(rt, query),
            limit=limit if limit and limit > 0 else None,
            continue_token=param(query, "continue"),
            resource_version=param(query, "resourceVersion"),
            resource_version_match=param(query, "resourceVersionMatch"),
        )
        return list_body(rt, page)

    def _create(self, rt: ResourceType, route: Route, body: bytes) -> Reply:
        if route.name is not None:
            raise ApiError(405, "the server does not allow this method on the requested resource")
        if rt.namespaced and route.namespace is None:
            raise ApiError(405, "the server does not allow this method on the requested resource")
        obj = parse_body(body)
        if rt.qualified == CRDS_QUALIFIED:
            try:
                self.resources.add_crd(obj)  # checked before it is stored
            except (ValueError, KeyError, TypeError) as exc:
                raise ApiError(422, f"invalid CustomResourceDefinition: {exc}") from None
        return Reply(201, self.store.create(rt, obj, route.namespace, via_api=True))

    def _delete(self, rt: ResourceType, route: Route, body: bytes) -> Reply:
        options = parse_body(body) if body.strip() else {}
        preconditions = options.get("preconditions") or {}
        deleted = self.store.delete(
            rt,
            route.namespace,
            str(route.name),
            precondition_rv=preconditions.get("resourceVersion"),
            precondition_uid=preconditions.get("uid"),
        )
        if rt.qualified == CRDS_QUALIFIED:
            self.resources.remove_crd(deleted)
        if rt.plural == "pods":
            return Reply(200, deleted)
        meta = deleted["metadata"]
        return Reply(200, errors.success_status(rt, meta["name"], meta.get("uid", "")))

    def _review(self, kind: str, verb: str, body: bytes) -> Reply:
        if verb != "create":
            raise ApiError(405, "the server does not allow this method on the requested resource")
        document = parse_body(body)
        if kind == "TokenReview":
            return Reply(201, self.tokens.review(document))
        return Reply(201, self.access.review(document))
