"""The API's OpenAPI 3.1 document, written out (``GET /openapi.json``).

``docs/openapi.json`` is a copy; a test keeps the two equal (regenerate it with
``python -m xscl.service.api.openapi > docs/openapi.json``).
"""

from __future__ import annotations

import json
from typing import Any

_ERROR = {"$ref": "#/components/responses/Error"}
_ID = {
    "name": "qid",
    "in": "path",
    "required": True,
    "description": (
        "a subscription id: a client's own, as it named it; an admin's: the registry "
        "id, CLIENT~ID for a client's subscription"
    ),
    "schema": {
        "type": "string",
        "pattern": "^(?:[A-Za-z0-9_.-]{1,64}~)?[A-Za-z_][A-Za-z0-9_.-]{0,199}$",
    },
}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def openapi_document() -> dict[str, Any]:
    """The document (a fresh dict each call)."""
    refusals = {"400": _ERROR, "401": _ERROR, "404": _ERROR}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "xscl subscription API",
            "version": "1",
            "description": (
                "Subscribe XSCL queries to a running xscl job and read their results. "
                "Every request but /health, /metrics and /openapi.json needs "
                "'Authorization: Bearer TOKEN' ('xscl api token create NAME'). A client "
                "has ids of its own (two clients may both subscribe 'W1') and sees only its "
                "own subscriptions; another client's id answers 404. An admin token sees "
                "all, by registry id (CLIENT~ID), with their owners. "
                "Refusals carry a stable code of docs/errors.md and change nothing."
            ),
        },
        "security": [{"bearer": []}],
        "paths": {
            "/subscriptions": {
                "post": {
                    "summary": "Subscribe the queries of an XSCL text",
                    "parameters": [
                        {
                            "name": "history",
                            "in": "query",
                            "required": False,
                            "description": (
                                "give the queries their results over the spool's documents "
                                "within this duration before they take effect (7d, 12h, 90m, "
                                "0: none); default: each query's window, 7d for an INF "
                                "window or one block, never before the spool's retained range"
                            ),
                            "schema": {
                                "type": "string",
                                "pattern": "^[0-9]+(\\.[0-9]+)?(ms|s|m|h|d)?$",
                            },
                        }
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "text/plain": {"schema": {"type": "string"}},
                            "application/json": {"schema": _ref("SubscribeBody")},
                        },
                    },
                    "responses": {
                        "201": _json(_ref("Event"), "subscribed: the ids and registry event"),
                        "409": _ERROR,
                        "413": _ERROR,
                        "422": _ERROR,
                        "429": _ERROR,
                        **refusals,
                    },
                },
                "get": {
                    "summary": "The client's subscriptions (an admin: all)",
                    "responses": {
                        "200": _json(_ref("Subscriptions"), "the subscriptions"),
                        "401": _ERROR,
                    },
                },
            },
            "/subscriptions/{qid}": {
                "delete": {
                    "summary": "Unsubscribe a query",
                    "parameters": [_ID],
                    "responses": {"200": _json(_ref("Event"), "unsubscribed"), **refusals},
                }
            },
            "/subscriptions/{qid}/results": {
                "get": {
                    "summary": (
                        "The query's results committed after a cursor, in commit order: "
                        "its history's new ones first, then the job's"
                    ),
                    "parameters": [
                        _ID,
                        {
                            "name": "after",
                            "in": "query",
                            "required": False,
                            "description": "the cursor of the previous page (none: from the first)",
                            "schema": {"type": "string"},
                        },
                        {
                            "name": "limit",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "integer", "minimum": 1, "default": 100},
                        },
                    ],
                    "responses": {"200": _json(_ref("Page"), "a page of results"), **refusals},
                }
            },
            "/subscriptions/{qid}/invoke": {
                "get": {
                    "summary": "The query's results whose documents lie in its window as of now",
                    "parameters": [_ID],
                    "responses": {"200": _json(_ref("Invocation"), "the results"), **refusals},
                }
            },
            "/subscriptions/{qid}/feed.atom": {
                "get": {
                    "summary": "The query's Atom feed (its newest results), as the job wrote it",
                    "parameters": [_ID],
                    "responses": {
                        "200": {
                            "description": "the feed",
                            "content": {"application/atom+xml": {"schema": {"type": "string"}}},
                        },
                        **refusals,
                    },
                }
            },
            "/check": {
                "post": {
                    "summary": "Check XSCL text as POST /subscriptions would; subscribe nothing",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "text/plain": {"schema": {"type": "string"}},
                            "application/json": {"schema": _ref("SubscribeBody")},
                        },
                    },
                    "responses": {
                        "200": _json(_ref("Event"), "it would subscribe these ids"),
                        "409": _ERROR,
                        "413": _ERROR,
                        "422": _ERROR,
                        **refusals,
                    },
                }
            },
            "/health": {
                "get": {
                    "summary": "Whether the API is up, and the registry's newest event",
                    "security": [],
                    "responses": {"200": _json({"type": "object"}, "up")},
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Counters in the Prometheus text format",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "the counters",
                            "content": {"text/plain": {"schema": {"type": "string"}}},
                        }
                    },
                }
            },
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": {"Error": _json(_ref("Error"), "refused; nothing changed")},
            "schemas": {
                "SubscribeBody": {
                    "type": "object",
                    "required": ["text"],
                    "properties": {"text": {"type": "string", "description": "XSCL queries"}},
                },
                "Event": {
                    "type": "object",
                    "properties": {
                        "ids": {"type": "array", "items": {"type": "string"}},
                        "version": {"type": "integer", "description": "the registry event"},
                        "warnings": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "joins whose state grows without bound "
                            "({TRUE, INF}): accepted, said once",
                        },
                    },
                },
                "Subscriptions": {
                    "type": "object",
                    "properties": {
                        "subscriptions": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "id": {"type": "string"},
                                    "owner": {"type": "string"},
                                    "text": {"type": "string", "description": "the query"},
                                },
                            },
                        }
                    },
                },
                "Page": {
                    "type": "object",
                    "properties": {
                        "results": {"type": "array", "items": {"type": "object"}},
                        "cursor": {
                            "type": ["string", "null"],
                            "description": "pass as 'after' for the next page",
                        },
                    },
                },
                "Invocation": {
                    "type": "object",
                    "properties": {
                        "results": {"type": "array", "items": {"type": "object"}},
                        "now_us": {"type": "integer"},
                        "window_us": {"type": ["integer", "null"], "description": "null: INF"},
                    },
                },
                "Error": {
                    "type": "object",
                    "properties": {
                        "code": {"type": "string", "description": "docs/errors.md"},
                        "message": {"type": "string"},
                        "line": {"type": ["integer", "null"]},
                        "column": {"type": ["integer", "null"]},
                        "errors": {"type": "array", "items": {"type": "object"}},
                    },
                },
            },
        },
    }


def openapi_text() -> str:
    """The document as ``docs/openapi.json`` holds it."""
    return json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(openapi_text(), end="")
