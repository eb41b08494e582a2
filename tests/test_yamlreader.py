"""Unit tests of kubectl_aicr.kube.yaml.reader: real kubeconfigs in each generator's style, the
YAML features they use, and every refusal with its line and column."""

import random

import pytest

from kubectl_aicr.errors import YAMLError
from kubectl_aicr.kube.yaml.reader import GO_YAML, MAX_DEPTH, load, load_all, load_first

CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWTVJNd0VRWURWUVFERXdwcmRXSmwKY201bGRHVnpNQjRYRFRJME1ERXdNVEV3TURBd01Gb1hEVE0wTURFd01URXdNREF3TUZvd0ZURVRNQkVHQTFVRQpBeE1LYTNWaVpYSnVaWFJsY3pDQ0FTSXdEUVlKS29aSWh2Y05BUUVCQlFBRGdnRVBBRENDQVFvQ2dnRUJBTHh5Ci0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"  # noqa: E501


# -- kubeconfigs as their generators write them ------------------------------------------

KIND = """\
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: https://127.0.0.1:38543
  name: kind-kind
contexts:
- context:
    cluster: kind-kind
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    client-certificate-data: %s
    client-key-data: %s
""" % (CA, CA, CA)

KIND_VALUE = {
    "apiVersion": "v1",
    "clusters": [{"cluster": {"certificate-authority-data": CA,
                              "server": "https://127.0.0.1:38543"}, "name": "kind-kind"}],
    "contexts": [{"context": {"cluster": "kind-kind", "user": "kind-kind"}, "name": "kind-kind"}],
    "current-context": "kind-kind",
    "kind": "Config",
    "preferences": {},
    "users": [{"name": "kind-kind", "user": {"client-certificate-data": CA,
                                             "client-key-data": CA}}],
}


def test_kind():
    assert load(KIND) == KIND_VALUE


def test_kubeadm_admin_conf():
    text = KIND.replace("kind-kind", "kubernetes").replace(
        "current-context: kubernetes", "current-context: kubernetes-admin@kubernetes")
    value = load(text)
    assert value["current-context"] == "kubernetes-admin@kubernetes"
    assert value["clusters"][0]["name"] == "kubernetes"


def test_k3s():
    text = """\
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: https://127.0.0.1:6443
  name: default
contexts:
- context:
    cluster: default
    user: default
  name: default
current-context: default
kind: Config
preferences: {}
users:
- name: default
  user:
    client-certificate-data: %s
    client-key-data: %s
""" % (CA, CA, CA)
    value = load(text)
    assert value["users"] == [{"name": "default", "user": {
        "client-certificate-data": CA, "client-key-data": CA}}]


EKS = """\
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: https://ABCDEF0123456789ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com
  name: arn:aws:eks:us-west-2:123456789012:cluster/prod
contexts:
- context:
    cluster: arn:aws:eks:us-west-2:123456789012:cluster/prod
    user: arn:aws:eks:us-west-2:123456789012:cluster/prod
  name: arn:aws:eks:us-west-2:123456789012:cluster/prod
current-context: arn:aws:eks:us-west-2:123456789012:cluster/prod
kind: Config
preferences: {}
users:
- name: arn:aws:eks:us-west-2:123456789012:cluster/prod
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - --region
      - us-west-2
      - eks
      - get-token
      - --cluster-name
      - prod
      - --output
      - json
      command: aws
      env: null
      interactiveMode: IfAvailable
      provideClusterInfo: false
""" % CA


def test_eks():
    value = load(EKS)
    arn = "arn:aws:eks:us-west-2:123456789012:cluster/prod"
    assert value["current-context"] == arn
    assert value["clusters"][0]["name"] == arn
    assert value["users"][0]["user"]["exec"] == {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "args": ["--region", "us-west-2", "eks", "get-token", "--cluster-name", "prod",
                 "--output", "json"],
        "command": "aws",
        "env": None,
        "interactiveMode": "IfAvailable",
        "provideClusterInfo": False,
    }


def test_eks_with_env_list_and_profile():
    text = EKS.replace("      env: null\n", "      env:\n      - name: AWS_PROFILE\n"
                                             "        value: prod\n")
    assert load(text)["users"][0]["user"]["exec"]["env"] == [
        {"name": "AWS_PROFILE", "value": "prod"}]


def test_gke_exec_plugin_with_folded_install_hint():
    text = """\
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: https://34.123.45.67
  name: gke_my-project_us-central1-c_my-cluster
contexts:
- context:
    cluster: gke_my-project_us-central1-c_my-cluster
    user: gke_my-project_us-central1-c_my-cluster
  name: gke_my-project_us-central1-c_my-cluster
current-context: gke_my-project_us-central1-c_my-cluster
kind: Config
preferences: {}
users:
- name: gke_my-project_us-central1-c_my-cluster
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin for use with kubectl by following
        https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin
      provideClusterInfo: true
""" % CA
    user = load(text)["users"][0]["user"]
    assert user["exec"] == {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "gke-gcloud-auth-plugin",
        "installHint": "Install gke-gcloud-auth-plugin for use with kubectl by following "
                       "https://cloud.google.com/kubernetes-engine/docs/how-to/"
                       "cluster-access-for-kubectl#install_plugin",
        "provideClusterInfo": True,
    }


def test_aks_kubelogin_with_explicit_indentation_indicator():
    text = """\
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: https://myaks-dns-12345678.hcp.eastus.azmk8s.io:443
  name: myAKS
contexts:
- context:
    cluster: myAKS
    user: clusterUser_myRG_myAKS
  name: myAKS
current-context: myAKS
kind: Config
preferences: {}
users:
- name: clusterUser_myRG_myAKS
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - get-token
      - --environment
      - AzurePublicCloud
      - --server-id
      - 6dae42f8-4368-4678-94ff-3960e28e3630
      - --login
      - devicecode
      command: kubelogin
      env: null
      installHint: |2

          kubelogin is not installed which is required to connect to AAD enabled cluster.

          To learn more, please go to https://aka.ms/aks/kubelogin
      provideClusterInfo: false
""" % CA
    exec_ = load(text)["users"][0]["user"]["exec"]
    assert exec_["args"][-2:] == ["--login", "devicecode"]
    assert exec_["args"][4] == "6dae42f8-4368-4678-94ff-3960e28e3630"
    assert exec_["installHint"] == (
        "\n  kubelogin is not installed which is required to connect to AAD enabled cluster.\n"
        "\n  To learn more, please go to https://aka.ms/aks/kubelogin\n")
    assert exec_["env"] is None and exec_["provideClusterInfo"] is False


def test_minikube_with_extensions():
    text = """\
apiVersion: v1
clusters:
- cluster:
    certificate-authority: /home/user/.minikube/ca.crt
    extensions:
    - extension:
        last-update: Mon, 01 Jan 2024 10:00:00 UTC
        provider: minikube.sigs.k8s.io
        version: v1.32.0
      name: cluster_info
    server: https://192.168.49.2:8443
  name: minikube
contexts:
- context:
    cluster: minikube
    extensions:
    - extension:
        last-update: Mon, 01 Jan 2024 10:00:00 UTC
        provider: minikube.sigs.k8s.io
        version: v1.32.0
      name: context_info
    namespace: default
    user: minikube
  name: minikube
current-context: minikube
kind: Config
preferences: {}
users:
- name: minikube
  user:
    client-certificate: /home/user/.minikube/profiles/minikube/client.crt
    client-key: /home/user/.minikube/profiles/minikube/client.key
"""
    value = load(text)
    cluster = value["clusters"][0]["cluster"]
    assert cluster["extensions"] == [{"extension": {
        "last-update": "Mon, 01 Jan 2024 10:00:00 UTC", "provider": "minikube.sigs.k8s.io",
        "version": "v1.32.0"}, "name": "cluster_info"}]
    assert cluster["server"] == "https://192.168.49.2:8443"
    assert value["contexts"][0]["context"]["namespace"] == "default"
    assert value["users"][0]["user"]["client-key"].endswith("/client.key")


def test_rancher_quoted_values_and_blank_lines():
    text = """\
apiVersion: v1
kind: Config
clusters:
- name: "my-cluster"
  cluster:
    server: "https://rancher.example.com/k8s/clusters/c-m-abcd1234"
    certificate-authority-data: "%s"

users:
- name: "my-cluster"
  user:
    token: "kubeconfig-user-abc12:abcdefghijklmnopqrstuvwxyz0123456789"


contexts:
- name: "my-cluster"
  context:
    user: "my-cluster"
    cluster: "my-cluster"

current-context: "my-cluster"
""" % CA
    value = load(text)
    assert value["clusters"][0]["cluster"]["server"] == (
        "https://rancher.example.com/k8s/clusters/c-m-abcd1234")
    assert value["users"][0]["user"]["token"] == (
        "kubeconfig-user-abc12:abcdefghijklmnopqrstuvwxyz0123456789")
    assert list(value) == ["apiVersion", "kind", "clusters", "users", "contexts",
                           "current-context"]


def test_openshift_oc_login():
    text = """\
apiVersion: v1
clusters:
- cluster:
    insecure-skip-tls-verify: true
    server: https://api.crc.testing:6443
  name: api-crc-testing:6443
contexts:
- context:
    cluster: api-crc-testing:6443
    namespace: default
    user: kubeadmin/api-crc-testing:6443
  name: default/api-crc-testing:6443/kubeadmin
current-context: default/api-crc-testing:6443/kubeadmin
kind: Config
preferences: {}
users:
- name: kubeadmin/api-crc-testing:6443
  user:
    token: sha256~abcdefABCDEF0123456789-_abcdefABCDEF01234
"""
    value = load(text)
    assert value["clusters"][0] == {"cluster": {"insecure-skip-tls-verify": True,
                                                "server": "https://api.crc.testing:6443"},
                                    "name": "api-crc-testing:6443"}
    assert value["current-context"] == "default/api-crc-testing:6443/kubeadmin"
    assert value["users"][0]["user"]["token"].startswith("sha256~")


def test_oidc_auth_provider():
    text = """\
users:
- name: oidc
  user:
    auth-provider:
      config:
        client-id: kubernetes
        client-secret: 1db158f6-177d-4d9c-8a8b-d36869918ec5
        extra-scopes: groups,email
        id-token: eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl
        idp-issuer-url: https://accounts.google.com
      name: oidc
"""
    config = load(text)["users"][0]["user"]["auth-provider"]["config"]
    assert config["extra-scopes"] == "groups,email"
    assert config["idp-issuer-url"] == "https://accounts.google.com"


def test_hand_merged_kubeconfig():
    text = """\
# merged by hand from two files
apiVersion: v1
kind: Config
clusters:
  - name: prod   # the production cluster
    cluster:
      server: https://prod.example.com:443
      insecure-skip-tls-verify: true
  - name: dev
    cluster: {server: 'https://dev.example.com', certificate-authority: ~/ca.pem}

users:
  - name: admin
    user: &admin
      username: admin
      password: "p#ss: w\\u00f6rd"
  - name: admin-copy
    user: *admin
  - name: empty
    user: {}
contexts: [{name: prod, context: {cluster: prod, user: admin}},
           {name: dev, context: {cluster: dev, user: admin-copy,
                                 namespace: kube-system}}]
current-context: prod
...
"""
    value = load(text)
    assert value["clusters"][1] == {"name": "dev", "cluster": {
        "server": "https://dev.example.com", "certificate-authority": "~/ca.pem"}}
    assert value["users"][0]["user"] == {"username": "admin", "password": "p#ss: w\u00f6rd"}
    assert value["users"][1]["user"] is value["users"][0]["user"]
    assert value["users"][2]["user"] == {}
    assert value["contexts"][1]["context"] == {"cluster": "dev", "user": "admin-copy",
                                              "namespace": "kube-system"}


JSON_KUBECONFIG = """\
{
    "kind": "Config",
    "apiVersion": "v1",
    "preferences": {},
    "clusters": [
        {
            "name": "dev",
            "cluster": {
                "server": "https:\\/\\/dev.example.com:6443",
                "certificate-authority-data": "DATA+OMITTED",
                "insecure-skip-tls-verify": false
            }
        }
    ],
    "users": [
        {
            "name": "caf\\u00e9",
            "user": {
                "token": "abc\\"def\\\\",
                "exec": {"command": "x", "args": [], "env": null}
            }
        }
    ],
    "contexts": [
        {
            "name": "dev",
            "context": {
                "cluster": "dev",
                "user": "caf\\u00e9"
            }
        }
    ],
    "current-context": "dev",
    "numbers": [1, -2, 2.5e3, 0.5, 1E-2]
}
"""


def test_json_kubeconfig():
    value = load(JSON_KUBECONFIG)
    assert value["clusters"][0]["cluster"] == {
        "server": "https://dev.example.com:6443", "certificate-authority-data": "DATA+OMITTED",
        "insecure-skip-tls-verify": False}
    assert value["users"][0] == {"name": "caf\u00e9", "user": {
        "token": 'abc"def\\', "exec": {"command": "x", "args": [], "env": None}}}
    assert value["numbers"] == [1, -2, 2500.0, 0.5, 0.01]
    assert [type(n) for n in value["numbers"]] == [int, int, float, float, float]


def test_compact_json():
    assert load('{"a": "b", "c": [1, 2.5e3, true, null]}') == {"a": "b", "c": [1, 2500.0, True,
                                                                             None]}
    assert load('{"a":"b","c":{"d":[]}}') == {"a": "b", "c": {"d": []}}
    assert load('["\\ud83d\\ude00", "\\u00e9"]') == ["\U0001f600", "\u00e9"]


def test_json_indented_with_tabs():
    assert load('{\n\t"a": [\n\t\t1,\n\t\t2\n\t]\n}\n') == {"a": [1, 2]}


def test_certificate_data_as_literal_block_wrapped_at_64_columns():
    lines = [CA[i:i + 64] for i in range(0, len(CA), 64)]
    text = ("clusters:\n- cluster:\n    certificate-authority-data: |\n"
            + "".join("      %s\n" % line for line in lines)
            + "    server: https://x\n  name: x\n")
    cluster = load(text)["clusters"][0]["cluster"]
    assert cluster["certificate-authority-data"] == "\n".join(lines) + "\n"
    assert cluster["server"] == "https://x"


def test_crlf_line_endings_and_bom():
    assert load(KIND.replace("\n", "\r\n")) == KIND_VALUE
    assert load("\ufeff" + KIND) == KIND_VALUE
    assert load("\ufeff" + KIND.replace("\n", "\r\n")) == KIND_VALUE
    assert load(KIND.replace("\n", "\r")) == KIND_VALUE
    assert load("a: |\r\n  x\r\n  y\r\nb: 'p\r\n  q'\r\n") == {"a": "x\ny\n", "b": "p q"}


def test_no_final_line_break():
    assert load("a: 1\nb: |\n  x") == {"a": 1, "b": "x\n"}
    assert load("a: 1") == {"a": 1}


# -- the YAML features kubeconfigs rely on -----------------------------------------------

def test_sequences_indented_or_not_under_their_key():
    assert load("a:\n- 1\n- 2\nb:\n  - 3\n  - 4\n") == {"a": [1, 2], "b": [3, 4]}
    assert load("- - a\n  - b\n- c: d\n  e: f\n") == [["a", "b"], {"c": "d", "e": "f"}]


def test_empty_values():
    assert load("a:\nb: ~\nc: null\nd: ''\ne: []\nf: {}\n") == {
        "a": None, "b": None, "c": None, "d": "", "e": [], "f": {}}
    assert load("- \n-\n- x\n") == [None, None, "x"]


def test_flow_collections_over_several_lines():
    assert load("a: [x,\n  y, {b: 1,\n    c: [2]},\n  ]\n") == {"a": ["x", "y", {"b": 1,
                                                                             "c": [2]}]}
    assert load("[a: b, c]") == [{"a": "b"}, "c"]
    assert load("{a, b: , 'c': d}") == {"a": None, "b": None, "c": "d"}
    assert load("[http://x:1/y, a:b]") == ["http://x:1/y", "a:b"]


def test_plain_scalars():
    assert load("a: b c  \n") == {"a": "b c"}
    assert load("a: x#y\nb: x #y\n") == {"a": "x#y", "b": "x"}
    assert load("a: one\n  two\n\n  three\n") == {"a": "one two\nthree"}
    assert load("a: -x\nb: ?y\nc: :z\nd: x:y\ne: https://h:1/p?q=1#f\n") == {
        "a": "-x", "b": "?y", "c": ":z", "d": "x:y", "e": "https://h:1/p?q=1#f"}
    assert load("key with spaces: v") == {"key with spaces": "v"}
    assert load("- a\n  - b\n") == ["a - b"]


def test_core_schema_resolution():
    text = ("- ~\n- null\n- Null\n- NULL\n- true\n- True\n- TRUE\n- false\n- FALSE\n"
            "- 0\n- -12\n- +7\n- 0o17\n- 0x1F\n- 1.5\n- -1e3\n- .5\n- 1.\n"
            "- .inf\n- -.Inf\n- yes\n- no\n- on\n- 012\n- 1_000\n- 0b1\n- tRUE\n- nULL\n")
    value = load(text)
    assert value[:9] == [None, None, None, None, True, True, True, False, False]
    assert value[9:14] == [0, -12, 7, 15, 31]
    assert [type(v) for v in value[9:14]] == [int] * 5
    assert value[14:20] == [1.5, -1000.0, 0.5, 1.0, float("inf"), float("-inf")]
    assert value[20:] == ["yes", "no", "on", 12, "1_000", "0b1", "tRUE", "nULL"]
    nan = load(".nan")
    assert nan != nan
    assert load("'true'") == "true" and load('"1"') == "1" and load("|\n  1\n") == "1\n"


def test_single_quoted():
    assert load("'it''s'") == "it's"
    assert load("a: 'one\n  two\n\n  three '\n") == {"a": "one two\nthree "}
    assert load("'# not a comment'") == "# not a comment"


def test_double_quoted_escapes():
    text = r'"\0\a\b\t\	\n\v\f\r\e\ \"\/\\\N\_\L\P\x41\u00e9\U0001F600"'
    assert load(text) == ("\x00\x07\x08\t\t\n\x0b\x0c\r\x1b \"/\\\x85\xa0\u2028\u2029"
                          "A\u00e9\U0001f600")


def test_double_quoted_line_folding_and_continuation():
    assert load('a: "one\n  two\n\n  three"\n') == {"a": "one two\nthree"}
    assert load('a: "one \\\n  two"\n') == {"a": "one two"}
    assert load('a: "one\\\n    two"\n') == {"a": "onetwo"}
    assert load('a: "x \\t\n  y"\n') == {"a": "x \t y"}


def test_block_scalars_and_chomping():
    text = ("a: |\n  x\n   y\n\n"
            "b: |-\n  x\n\n"
            "c: |+\n  x\n\n"
            "d: >\n  one\n  two\n\n  three\n    more\n  last\n"
            "e: >-\n  folded\n"
            "f: |2-\n     indented\n"
            "g: >+\n  x\n\n"
            "h: |\n  # not a comment\n"
            "# a comment\n"
            "i: |\n\n  after empty\n")
    assert load(text) == {
        "a": "x\n y\n", "b": "x", "c": "x\n\n", "d": "one two\nthree\n  more\nlast\n",
        "e": "folded", "f": "   indented", "g": "x\n\n", "h": "# not a comment\n",
        "i": "\nafter empty\n"}
    assert load("- |1\n  x\n- >2\n   y\n") == [" x\n", " y\n"]
    assert load("a: |\nb: 1\n") == {"a": "", "b": 1}


def test_comments_everywhere():
    text = ("# head\n%YAML 1.2 # directive\n--- # start\n"
            "a: 1 # after\n# between\nb: # before value\n  - x # in seq\n"
            "  # indented\n  - [y, # in flow\n     z]\n... # end\n# tail\n")
    assert load(text) == {"a": 1, "b": ["x", ["y", "z"]]}


def test_anchors_and_aliases():
    value = load("a: &x {k: v}\nb: *x\nc: &s str\nd: *s\ne: &e\nf: *e\n")
    assert value == {"a": {"k": "v"}, "b": {"k": "v"}, "c": "str", "d": "str", "e": None,
                     "f": None}
    assert value["a"] is value["b"]
    assert load("&k key: value") == {"key": "value"}
    assert load("- &a a\n- *a : b\n") == ["a", {"a": "b"}]


def test_merge_key_is_refused_not_ignored():
    # "<<" merge keys belong to YAML 1.1, which kubectl's go-yaml applies: ignoring one would
    # misread the kubeconfig, so a plain "<<" key is refused; a quoted one is an ordinary key.
    with pytest.raises(YAMLError) as raised:
        load("a: &a {x: 1}\nb:\n  <<: *a\n  y: 2\n", "k.yaml")
    assert (raised.value.line, raised.value.column) == (3, 3)
    assert "merge keys (<<)" in str(raised.value)
    assert load("'<<': 1\n") == {"<<": 1}


def test_tags():
    text = ("- !!str 12\n- !!int '12'\n- !!float 1\n- !!bool 'true'\n- !!null ''\n"
            "- !!str\n- !!map {a: 1}\n- !!seq [1]\n- ! 12\n"
            "- !<tag:yaml.org,2002:str> 1\n- !!binary aGVs\n  bG8=\n"
            "- !!binary |\n  aGVs\n  bG8=\n- !!int 0x10\n")
    assert load(text) == ["12", 12, 1.0, True, None, "", {"a": 1}, [1], "12", "1",
                          b"hello", b"hello", 16]
    assert load("--- !!map\na: 1\n") == {"a": 1}
    assert load("%TAG !e! tag:yaml.org,2002:\n--- !e!str 12\n") == "12"


def test_explicit_keys():
    assert load("? a\n: 1\n? b\n? c\n: 3\n") == {"a": 1, "b": None, "c": 3}
    assert load("? |\n  block key\n: v\n") == {"block key\n": "v"}
    assert load("{? a : b, ? c}") == {"a": "b", "c": None}


def test_non_string_keys():
    assert load("1: a\nfalse: b\n~: c\n1.5: d\n") == {1: "a", False: "b", None: "c", 1.5: "d"}
    with pytest.raises(YAMLError) as info:   # a Python dict cannot hold both
        load("1: a\ntrue: b\n")
    assert info.value.problem == "key true is the same Python key as the earlier key 1"


def test_documents():
    assert load("") is None
    assert load("# only a comment\n") is None
    assert load("---\n") is None
    assert load("--- text\n") == "text"
    assert load("--- |\n  block\n") == "block\n"
    assert load("---\na: 1\n...\n") == {"a": 1}
    assert load_all("a: 1\n---\nb: 2\n...\n---\n...\n%YAML 1.1\n--- c\n") == [
        {"a": 1}, {"b": 2}, None, "c"]
    assert load_all("") == []
    assert load_all("...\n") == []


def test_unicode_content():
    assert load("name: caf\u00e9 \u4e2d\u6587 \U0001f600\n") == {
        "name": "caf\u00e9 \u4e2d\u6587 \U0001f600"}


def test_tabs_as_separation_are_fine():
    assert load("a:\tb\nc: [1,\t2]\n-d:\t'e'\t# c\n") == {"a": "b", "c": [1, 2], "-d": "e"}
    assert load("a: |\n  \tx\n") == {"a": "\tx\n"}


# -- refusals, with line and column ------------------------------------------------------

@pytest.mark.parametrize("text,line,column,problem", [
    ("a:\n\tb: 1\n", 2, 1, "tab character used for indentation"),
    ("a:\n  b: 1\n  \tc: 2\n", 3, 3, "tab character used for indentation"),
    ("-\t- a\n", 1, 2, "tab character used for indentation"),
    ("users: []\nclusters: []\nusers: [x]\n", 3, 1, "duplicate key 'users'"),
    ("a:\n  b: 1\n  c: 2\n  b: 3\n", 4, 3, "duplicate key 'b'"),
    ("{a: 1, a: 2}", 1, 8, "duplicate key 'a'"),
    ("1: a\n0x1: b\n", 2, 1, "duplicate key 1"),
    ('a: "abc\n  def\n', 1, 4, "unterminated double-quoted string"),
    ("a: 'abc", 1, 4, "unterminated single-quoted string"),
    ("a: [1, 2\n", 1, 4, "unterminated flow sequence"),
    ("a: {b: 1\n", 1, 4, "unterminated flow mapping"),
    ("? [a]\n: b\n", 1, 1, "complex mapping keys are not supported"),
    ("[a, b]: c\n", 1, 1, "complex mapping keys are not supported"),
    ("{a: b}: c\n", 1, 1, "complex mapping keys are not supported"),
    ("? a: b\n: c\n", 1, 1, "complex mapping keys are not supported"),
    ("[[a]: b]", 1, 2, "complex mapping keys are not supported"),
    ("a: !foo x\n", 1, 4, "unknown tag '!foo'"),
    ("a: !!set {x}\n", 1, 4, "unknown tag '!!set'"),
    ("a: !!omap []\n", 1, 4, "unknown tag '!!omap'"),
    ("a: !!timestamp 2001-12-14\n", 1, 4, "unknown tag '!!timestamp'"),
    ("a: !e!x y\n", 1, 4, "undefined tag handle '!e!'"),
    ("a: *x\n", 1, 4, "undefined alias 'x'"),
    ("a: &x [*x]\n", 1, 8, "undefined alias 'x'"),
    ("b: &x 1\na: &y !!str *x\n", 2, 4, "an alias cannot have a tag or an anchor"),
    ("a:\n  b: 1\n c: 2\n", 3, 2, "bad indentation of a mapping entry"),
    ("a: 1\n  b: 2\n", 2, 4, "mapping values are not allowed here"),
    ("a: b: c\n", 1, 5, "mapping values are not allowed here"),
    ("--- a: b\n", 1, 6, "mapping values are not allowed here"),
    ("a: 1\nb: 2\ngarbage\n", 3, 8, "expected ':' after a mapping key"),
    ("a: 1\n- b\n", 2, 1, "expected a mapping entry ('key: value'), found a sequence entry"),
    ("- a\nb: c\n", 2, 1, "unexpected content after the document's root node"),
    ("a: 1\n]\n", 2, 1, "unexpected character ']'"),
    ('a: "b" c\n', 1, 8, "unexpected text after the value"),
    ('a: "b"# c\n', 1, 7, "a comment must be separated from the value by whitespace"),
    ('a: "\\q"\n', 1, 5, "invalid escape sequence '\\\\q'"),
    ('a: "\\x4"\n', 1, 5, "invalid escape sequence '\\\\x': expected 2 hexadecimal digits"),
    ('a: "\\ud800"\n', 1, 5, "invalid escape sequence: U+D800 is not a character"),
    ("a: |x\n  b\n", 1, 5, "invalid block scalar header"),
    ("a: |0\n  b\n", 1, 5, "invalid block scalar header"),
    ("a: |\n    \n  b\n", 3, 3, "a leading empty line of the block scalar is more indented"
                                " than its first line"),
    ("a: !!int abc\n", 1, 4, "invalid !!int value 'abc'"),
    ("a: !!bool yes\n", 1, 4, "invalid !!bool value 'yes'"),
    ("a: !!binary '@@'\n", 1, 4, "invalid !!binary value '@@'"),
    ("a: !!map x\n", 1, 4, "tag !!map cannot be applied to a scalar"),
    ("a: !!str [x]\n", 1, 4, "tag !!str cannot be applied to a sequence"),
    ("a: 1\n---\nb: 2\n", 2, 1, "expected a single document, found a second one"),
    ("%YAML 2.0\n---\na\n", 1, 1, "unsupported YAML version 2.0"),
    ("%YAML 1.2\n%YAML 1.2\n---\na\n", 2, 1, "repeated %YAML directive"),
    ("%YAML 1.2\na: 1\n", 2, 1, "directives must be followed by a '---' document start"),
    ("- a\n%YAML 1.2\n---\n", 2, 1, "a directive must follow a '...' document end marker"),
    ("a: 1\n%YAML 1.2\n---\n", 2, 1, "unexpected '%' (a directive can only come before '---')"),
    ("a: b\x01\n", 1, 5, "invalid character U+0001"),
    ("a: [b\n---\n", 2, 1, "document marker inside a flow collection"),
    ('a: "b\n---\n"', 2, 1, "document marker inside a double-quoted string"),
    ("a: [b,\nc]\n", 2, 1, "bad indentation inside a flow collection"),
    ("a: @x\n", 1, 4, "the character '@' is reserved and cannot start a plain scalar"),
    ("a\nb: c\n", 1, 1, "an implicit mapping key must be on a single line"),
    ("[a\n: b]", 1, 2, "an implicit key in a flow sequence must be on a single line"),
    ("&a &b x\n", 1, 4, "a node can have only one anchor"),
    ("!!str !!int x\n", 1, 7, "a node can have only one tag"),
    ("[a, , b]", 1, 5, "unexpected ',' in a flow collection"),
    ("[a b: c d: e]", 1, 10, "expected ',' or ']' in a flow collection"),
    ("... x\n", 1, 5, "unexpected text after the '...' document end marker"),
])
def test_refusals(text, line, column, problem):
    with pytest.raises(YAMLError) as info:
        load(text, "config")
    err = info.value
    assert (err.filename, err.line, err.column) == ("config", line, column), str(err)
    if problem is not None:
        assert err.problem.startswith(problem), str(err)
    assert str(err) == "config:%d:%d: %s" % (line, column, err.problem)


def test_nesting_depth_is_capped():
    assert load("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    for text in ["[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "[" * 100000,
                 "{a: " * 100000, "- " * 100000,
                 "".join("  " * i + "a:\n" for i in range(MAX_DEPTH + 1))]:
        with pytest.raises(YAMLError) as info:
            load(text)
        assert "nested deeper than %d levels" % MAX_DEPTH in info.value.problem


def test_alias_expansion_is_capped():
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for i in range(1, 9):
        text += "%s: &%s [%s]\n" % (chr(97 + i), chr(97 + i), ",".join(["*" + chr(96 + i)] * 9))
    with pytest.raises(YAMLError) as info:
        load(text)
    assert info.value.problem == "more than 1000000 nodes once aliases are expanded"
    assert info.value.line == 7


def test_huge_integer_is_refused():
    with pytest.raises(YAMLError) as info:
        load("a: " + "9" * 5000)
    assert (info.value.line, info.value.column, info.value.problem) == (
        1, 4, "integer too large")



def test_huge_integers_never_raise_past_pythons_digit_limit():
    """int("9" * 5000) raises ValueError (Python's 4,300-digit limit): the fast reader leaves such a file to
    the full one (core schema: "integer too large"); go-yaml's resolution makes it a string, as kubectl."""
    from kubectl_aicr.kube.yaml import block

    assert block.load("a: " + "9" * 5000 + "\n") is None
    for number in ("9" * 5000, "-" + "9" * 5000, "9" * 4301):
        assert block.load("a: %s\n" % number, block.GO_YAML) == {"a": number} == go("a: %s\n" % number)
        assert block.resolve_go_yaml(number) == number


SAMPLES = [KIND, EKS, JSON_KUBECONFIG, "a: &x [1, {b: 'c'}]\nd: *x\ne: |+\n  f\n",
           '%YAML 1.2\n---\n"a\\tb": !!binary aGk=\n? x\n: [y, ~]\n...\n']


def test_mutated_input_raises_only_yaml_errors():
    rnd = random.Random(1234)
    alphabet = " \t\n-?:,[]{}#&*!|>'\"%@`\\ab0.~+\u00e9\r"
    for _ in range(1000):
        chars = list(rnd.choice(SAMPLES))
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(len(chars))
            op = rnd.random()
            if op < 0.4:
                chars.insert(i, rnd.choice(alphabet))
            elif op < 0.7:
                del chars[i]
            else:
                chars[i] = rnd.choice(alphabet)
        text = "".join(chars)
        for schema in ("core", GO_YAML):
            try:
                load_all(text, schema=schema)
            except YAMLError as exc:
                assert "internal error" not in exc.problem, repr(text)
        for cut in (len(text) // 3, len(text) // 2):
            try:
                load_all(text[:cut])
            except YAMLError as exc:
                assert "internal error" not in exc.problem, repr(text[:cut])


def test_rejects_non_text():
    with pytest.raises(TypeError):
        load(b"a: 1")


# -- GO_YAML: kubeconfig as kubectl reads it (sigs.k8s.io/yaml over go-yaml v2, then JSON) -------
# Each expected value was checked with `kubectl config view --raw -o json` (kubectl 1.37) on the
# same scalar inside a cluster extension; tests/test_kubectl_yaml_parity.py keeps checking it.

def go(text):
    return load(text, schema=GO_YAML)


@pytest.mark.parametrize("plain,value", [
    # resolve.go's table: these exact spellings, no others ("oN", "YeS" are strings)
    ("y", True), ("Y", True), ("yes", True), ("Yes", True), ("YES", True), ("on", True), ("On", True),
    ("ON", True), ("true", True), ("True", True), ("TRUE", True),
    ("n", False), ("N", False), ("no", False), ("No", False), ("NO", False), ("off", False), ("Off", False),
    ("OFF", False), ("false", False), ("oN", "oN"), ("YeS", "YeS"), ("nO", "nO"), ("tRUE", "tRUE"),
    ("~", None), ("null", None), ("Null", None), ("NULL", None), ("", None), ("nULL", "nULL"),
    # numbers as strconv reads them once go-yaml removed the underscores
    ("017", 15), ("-017", -15), ("0o17", 15), ("0x_1F", 31), ("-0x1F", -31), ("0b101", 5), ("-0b11", -3),
    ("1_000", 1000), ("+12", 12), ("0", 0), ("08", 8.0), ("1e3", 1000.0), ("1.50", 1.5), (".5", 0.5),
    ("-.5e1", -5.0), ("0x8000000000000000", 1 << 63), ("18446744073709551616", 18446744073709551616.0),
    ("0xFFFFFFFFFFFFFFFFFF", "0xFFFFFFFFFFFFFFFFFF"), ("1e999", "1e999"), ("0x", "0x"), ("._5", "._5"),
    ("_1", "_1"), ("1:20", "1:20"),
    # timestamps stay strings when decoded into interface{}
    ("2001-01-01", "2001-01-01"), ("2001-01-01 10:00:00", "2001-01-01 10:00:00"),
    ("<<", "<<"), ("-x", "-x")])
def test_go_yaml_resolves_plain_scalars_as_kubectl(plain, value):
    got = go("a: %s\n" % plain)["a"]
    assert got == value and type(got) is type(value)


def test_go_yaml_quoted_and_block_scalars_are_strings():
    assert go("a: 'yes'\nb: \"017\"\nc: |\n  on\n") == {"a": "yes", "b": "017", "c": "on\n"}


@pytest.mark.parametrize("text,value", [
    ("a: !!str 12", "12"), ('a: !!int "12"', 12), ("a: !!float 1", 1.0), ("a: !!float 0x10", 16.0),
    ("a: !!bool yes", True), ('a: !!null ""', None), ("a: !!null", None), ("a: !!str", ""),
    ("a: !foo bar", "bar"), ("a: !foo", ""), ("a: !!set x", "x"), ("a: ! 12", "12"),
    ("a: !<tag:example.com,2000:x> 5", "5"), ("a: !!str {b: 1}", {"b": 1}), ("a: !!map [1]", [1]),
    ("a: !!timestamp 2001-01-01", "2001-01-01"), ("a: !!timestamp 2001-1-2t1:2:3.5+01:00", "2001-1-2t1:2:3.5+01:00"),
    ("a: !!timestamp 2001-01-02 01:02:03", "2001-01-02 01:02:03"),
    # !!binary: the decoded bytes as text (bytes that are not UTF-8 become U+FFFD, one each)
    ("a: !!binary aGk=", "hi"), ("a: !!binary |\n  aG\n  k=", "hi"), ('a: !!binary "aG\\nk="', "hi"),
    ("a: !!binary", ""), ("a: !!binary /w==", "\ufffd"), ("a: !!binary 4oI=", "\ufffd\ufffd")])
def test_go_yaml_tags(text, value):
    assert go(text) == {"a": value}


@pytest.mark.parametrize("text,problem", [
    ("a: !!int abc", "invalid !!int value"), ("a: !!int 1.0", "invalid !!int value"),
    ("a: !!int", "invalid !!int value"), ("a: !!bool 1", "invalid !!bool value"),
    ("a: !!null x", "invalid !!null value"),
    ("a: !!binary aG k=", "not base64"), ("a: !!binary >\n  aG\n  k=", "not base64"),
    ('a: !!binary "aG\\tk="', "not base64"), ("a: !!binary aGk", "not base64"),
    ("a: !!timestamp 2001-02-30", "invalid !!timestamp"), ("a: !!timestamp 2001-01-02T01:02:03", "invalid !!timestamp"),
    ("a: +.inf", "infinite number has no JSON form"), ("a: [.nan]", "NaN has no JSON form"),
    ("a: !!float .NaN", "NaN has no JSON form"), ("~: 4", "null mapping key"), (": 4", "null mapping key"),
    ("<<: 1", "merge key"), ("<<: [{a: 1}, 2]", "merge key"), ("a: 1\na: 2", "duplicate key 'a'"),
    ('"1": a\n1: b', "duplicate key '1'")])
def test_go_yaml_refusals(text, problem):
    with pytest.raises(YAMLError, match=problem):
        go(text)


def test_go_yaml_keys_become_json_strings():
    assert go("1.5: a\n1e6: b\n0.1: d\nyes: e\n.inf: f\n017: g\n3.14159265: h\n-0.00001: i\n") == {
        "1.5": "a", "1e+06": "b", "0.1": "d", "true": "e", ".inf": "f", "15": "g", "3.1415927": "h", "-1e-05": "i"}
    assert go("[yes: 1]") == [{"true": 1}]


def test_go_yaml_merge_keys_as_go_yaml_v2_applies_them():
    # in order: a merge replaces the keys written before it, keys after it replace the merged ones
    assert go("b: &x {k: 1, j: 2}\nc:\n  j: 3\n  <<: *x\n  m: 4\n")["c"] == {"j": 2, "k": 1, "m": 4}
    assert go("<<: {a: 1}\na: 2\n") == {"a": 2}
    assert go("<<: [{a: 1, b: 1}, {b: 2, c: 2}]\nc: 3\n") == {"a": 1, "b": 1, "c": 3}
    assert go("!!merge <<: {a: 1}\n") == {"a": 1}
    assert go('"<<": {a: 1}\n') == {"<<": {"a": 1}}
    with pytest.raises(YAMLError, match="merge keys"):
        load("<<: {a: 1}\n")   # the core schema still refuses them


def test_core_schema_is_unchanged_by_go_yaml():
    assert load("a: yes\nb: 017\nc: 1_000\n") == {"a": "yes", "b": 17, "c": "1_000"}
    with pytest.raises(YAMLError, match="unknown tag"):
        load("a: !foo x\n")
    with pytest.raises(ValueError):
        load("a: 1", schema="yaml-1.1")


def test_load_first_reads_only_the_first_document():
    assert load_first("a: 1\n---\nb: [\n", schema=GO_YAML) == {"a": 1}
    assert load_first("--- a\n...\n%%%\n") == "a"
    assert load_first("") is None
    with pytest.raises(YAMLError):
        load_first("a: [\n---\nb: 1\n")
