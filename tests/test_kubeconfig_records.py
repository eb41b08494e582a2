"""kubeconfig: only the selected context's cluster and user become records, while every entry of the file is
still checked as kubectl decodes it (issue 15). The kubectl differential corpus (test_kubectl_parity.py)
covers the errors themselves; these check which entries are built and that an error anywhere still stops."""

import pytest

from kubectl_aicr.kube import kubeconfig
from kubectl_aicr.errors import ConfigError

ENTRIES = 5


def _file(tmp_path, cluster_extra="", user_extra="", broken=2):
    lines = ["apiVersion: v1", "kind: Config", "current-context: ctx-%d" % (ENTRIES - 1), "clusters:"]
    for i in range(ENTRIES):
        lines += ["- name: c%d" % i, "  cluster:", "    server: https://h%d:6443" % i,
                  "    certificate-authority-data: QUJD"]
        if i == broken:
            lines += ["    " + cluster_extra] if cluster_extra else []
    lines.append("users:")
    for i in range(ENTRIES):
        lines += ["- name: u%d" % i, "  user:", "    token: t%d" % i]
        if i == broken:
            lines += ["    " + user_extra] if user_extra else []
    lines.append("contexts:")
    for i in range(ENTRIES):
        lines += ["- name: ctx-%d" % i, "  context:", "    cluster: c%d" % i, "    user: u%d" % i]
    path = tmp_path / "config"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _built(records):
    return sorted(name for name, entry in records._entries.items() if not isinstance(entry, kubeconfig._Waiting))


def test_only_the_selected_cluster_and_user_are_built(tmp_path):
    config = kubeconfig.load(_file(tmp_path))
    assert _built(config.clusters) == [] and _built(config.auth_infos) == []
    selection = kubeconfig.select(config)
    assert selection.cluster.server == "https://h4:6443" and selection.auth_info.token == "t4"
    assert _built(config.clusters) == ["c4"] and _built(config.auth_infos) == ["u4"]
    assert sorted(config.clusters) == ["c0", "c1", "c2", "c3", "c4"] and len(config.auth_infos) == ENTRIES
    assert config.clusters["c1"].certificate_authority_data == b"ABC"  # built on demand, the same record


@pytest.mark.parametrize("cluster_extra, user_extra, message", [
    ("insecure-skip-tls-verify: 1", "", "insecure-skip-tls-verify must be true or false, not a number"),
    ("tls-server-name: [a]", "", "tls-server-name must be a string, not a list"),
    ("", "client-key-data: not*base64", "is not valid base64 (illegal base64 data at input byte 3)"),
    ("", "username: [1]", "username must be a string, not a list"),
    ("", "exec: 3", "exec must be a mapping, not a number"),
])
def test_an_error_in_an_entry_not_selected_still_stops_the_load(tmp_path, cluster_extra, user_extra, message):
    path = _file(tmp_path, cluster_extra, user_extra)
    with pytest.raises(ConfigError) as failed:
        kubeconfig.load(path)
    assert message in str(failed.value)
    assert ("clusters[2]" if cluster_extra else "users[2]") in str(failed.value)
