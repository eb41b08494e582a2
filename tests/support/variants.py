"""Rollout variants in the test API server, for the end-to-end tests of the write commands.

``put_variant`` stores a fixture rollout changed by a function; ``patches`` lists the PATCH requests the server
received (none: nothing was written).
"""


def patches(api_server):
    """The PATCH requests ``api_server`` (tests/support/apiserver/) received, in order."""
    return [r for r in api_server.requests if r.method == "PATCH"]


def put_variant(api_server, role, edit):
    """Store the fixture ``role`` changed by ``edit`` (a function of the object, a dict); returns its name."""
    obj = api_server.get_object("RuntimeRollout", api_server.fixture_name(role))
    obj["metadata"].pop("resourceVersion")
    edit(obj)
    api_server.put_object(obj)
    return obj["metadata"]["name"]
