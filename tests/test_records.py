"""kubectl_aicr.records: what a record class declared with annotations gives, and what it refuses."""

from __future__ import annotations

import copy
import pickle

import pytest

from kubectl_aicr.kube.kubeconfig import AuthInfo, AuthProvider, ExecConfig
from kubectl_aicr.records import Record


class Point(Record):
    x: int
    y: int = 0
    label: Optional[str] = None


class Login(Record):
    _secret = ("password",)

    user: str
    password: Optional[str] = None

    @property
    def shown(self):
        return "%s:***" % self.user


def test_arguments_by_position_or_keyword_with_defaults():
    assert Point._fields == ("x", "y", "label")
    point = Point(1, label="a")
    assert (point.x, point.y, point.label) == (1, 0, "a")
    assert Point(x=1, y=2) == Point(1, 2) and Point(1) != Point(2) and Point(1) != Login("u")


@pytest.mark.parametrize("args, kwargs, words", [
    ((), {}, "missing argument x"),
    ((1, 2, 3, 4), {}, "takes 3 arguments, not 4"),
    ((1,), {"x": 2}, "unknown or repeated argument x"),
    ((1,), {"z": 2}, "unknown or repeated argument z"),
])
def test_wrong_arguments_are_type_errors(args, kwargs, words):
    with pytest.raises(TypeError, match=words):
        Point(*args, **kwargs)


def test_a_field_without_a_default_after_one_with_a_default_is_refused():
    with pytest.raises(TypeError, match="field b without a default follows"):
        class Bad(Record):
            a: int = 0
            b: int
    with pytest.raises(TypeError, match="declares no annotated fields"):
        class Empty(Record):
            pass


def test_records_are_immutable_values():
    point = Point(1, 2)
    with pytest.raises(AttributeError, match="_replace"):
        point.x = 5
    with pytest.raises(AttributeError):
        del point.y
    with pytest.raises(AttributeError):
        point.z = 1  # no __dict__: slots only
    changed = point._replace(y=3)
    assert (changed, point) == (Point(1, 3), Point(1, 2))
    with pytest.raises(TypeError, match="has no field z"):
        point._replace(z=1)
    assert hash(Point(1, 2)) == hash(Point(1, 2)) and len({Point(1, 2), Point(1, 2), Point(2)}) == 2
    assert copy.deepcopy(point) == point and pickle.loads(pickle.dumps(point)) == point


def test_repr_names_fields_and_never_shows_a_secret():
    assert repr(Point(1, label="a")) == "Point(x=1, y=0, label='a')"
    assert repr(Login("bob", "hunter2")) == "Login(user='bob', password=<redacted>)"
    assert repr(Login("bob")) == "Login(user='bob', password=None)"
    assert Login("bob", "x").shown == "bob:***"  # properties and methods are declared as usual
    user = AuthInfo(name="u", token="tok-123", password="pw-456", client_key_data=b"KEY-789",
                    exec=ExecConfig(command="aws", args=("--secret", "arg-000"), env=(("K", "env-111"),)),
                    auth_provider=AuthProvider("oidc", {"id-token": "id-222"}))
    shown = repr(user)
    for secret in ("tok-123", "pw-456", "KEY-789", "arg-000", "env-111", "id-222"):
        assert secret not in shown
    assert "name='u'" in shown and "command='aws'" in shown
    from kubectl_aicr.kube.kubeconfig import Cluster
    from kubectl_aicr.kube.rest import RESTConfig
    for record in (Cluster(name="c", server="https://h", proxy_url="http://u:hunter2@proxy:3128"),
                   RESTConfig(host="https://h", cluster_name="c", proxy_url="http://u:hunter2@proxy:3128")):
        assert "hunter2" not in repr(record) and "proxy_url=<redacted>" in repr(record)
