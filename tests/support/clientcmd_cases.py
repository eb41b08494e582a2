"""client-go's own ``tools/clientcmd`` test tables, as kubeconfig files run through the real kubectl and the
plugin (test-only code; the cases join :mod:`tests.support.kubeconfig_corpus` and run in tests/test_kubectl_parity.py).

Each case below says which client-go test it comes from (``validation_test.go``, ``loader_test.go``,
``client_config_test.go``, ``api/v1/defaults_test.go`` in k8s.io/client-go/tools/clientcmd). The tables
build Go structs in memory; here each becomes a kubeconfig file with the same names and fields, and the
servers they name (``anything``, ``https://localhost:8443``, ...) become the HTTPS test API server, so
that what both clients do with it can be compared on the wire. Where the Go test uses an override
(``ConfigOverrides``), the case writes the overriding value into the file.

What the comparison found is recorded by each case's expectation: ``SAME`` (the same requests),
``BOTH_REFUSE``, ``ANONYMOUS`` (a context without a user), and the plugin's deliberate difference,
``FALLBACK``: kubectl falls back to ``http://localhost:8080``, plain ``http://`` or a password
prompt, where the plugin stops with one error line and sends nothing.
"""

import base64
import os

import yaml

from tests.support import kubeconfig_corpus as corpus
from tests.support.kubeconfig_corpus import (ANONYMOUS, BOTH_REFUSE, FALLBACK, LOCALHOST_8080, PROMPT, SAME,
                                     Case, kubeconfig)

V1, V1BETA1, V1ALPHA1 = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1",
                         "client.authentication.k8s.io/v1alpha1")
NOT_A_GROUP = "clientauthentication.k8s.io/v1alpha1"  # the tables' apiVersion: not the exec API group
NO_SUCH_CONTEXT = r"context was not found for specified context: "


def case(function):
    """Register ``function`` in the corpus under ``clientcmd-<name>``."""
    corpus.CASES["clientcmd-" + function.__name__.strip("_").replace("_", "-")] = function
    return function


def _cluster(ctx, **fields):
    """A cluster entry for the main test server (its CA as data) with ``fields`` on top (None removes one)."""
    body = {"server": ctx.main.url, "certificate-authority-data": ctx.ca_data()}
    body.update(fields)
    return {key: value for key, value in body.items() if value is not None}


def _token(ctx):
    return ctx.token("bob@example.com")


def _clean(ctx, user=None, **cluster):
    """client_config_test.go ``createValidTestConfig``: cluster, user and context all named "clean"."""
    return kubeconfig({"clean": _cluster(ctx, **cluster)}, {"clean": {"token": _token(ctx)} if user is None else user},
                      {"clean": ("clean", "clean")}, "clean")


def _write(ctx, config, name="config"):
    return ctx.write(name, config)


def _b64(data):
    return base64.b64encode(data).decode("ascii")


# ---------------------------------------------------------------------------------------------
# validation_test.go


def _bad_info_but_ok(ctx):
    return kubeconfig({"missing ca": _cluster(ctx, **{"certificate-authority": ctx.path("missing"),
                                                       "certificate-authority-data": None}),
                       "clean": _cluster(ctx)},
                      {"error": {"username": "anything", "token": "here"}, "clean": {"token": _token(ctx)}},
                      {"dirty": ("missing ca", "error"), "clean": ("clean", "clean")}, "dirty")


@case
def confirm_usable_bad_info_but_ok_config_clean(ctx):
    # validation_test.go TestConfirmUsableBadInfoButOkConfig: the clean context is usable
    return Case("", SAME, kubeconfig_env=_write(ctx, _bad_info_but_ok(ctx)), args=("--context", "clean"))


@case
def confirm_usable_bad_info_config(ctx):
    # validation_test.go TestConfirmUsableBadInfoConfig (and the dirty context of ...BadInfoButOkConfig):
    # both problems of the entry in one error
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, _bad_info_but_ok(ctx)),
                plugin_error=r"^invalid configuration, 2 problems: \(1\) more than one authentication method found "
                             r"for error; found \[token basicAuth\], only one is allowed; \(2\) unable to read "
                             r"certificate-authority .*/missing for missing ca due to open .*: no such file",
                kubectl_error=r"(?s)more than one authentication method found for error.*unable to read "
                              r"certificate-authority")


def _missing_objects(ctx):
    return kubeconfig({"kind-cluster": _cluster(ctx)}, {"kind-user": {"token": _token(ctx)}},
                      {"missing-user": ("kind-cluster", "garbage"), "missing-cluster": ("garbage", "kind-user")}, "")


@case
def confirm_usable_missing_user(ctx):
    # validation_test.go TestConfirmUsableMissingObjects (missing-user)
    return Case("", FALLBACK, kubeconfig_env=_write(ctx, _missing_objects(ctx)), args=("--context", "missing-user"),
                kubectl_error=PROMPT, plugin_error=r'^context "missing-user" names user "garbage", which is not')


@case
def confirm_usable_missing_cluster(ctx):
    # validation_test.go TestConfirmUsableMissingObjects (missing-cluster)
    return Case("", FALLBACK, kubeconfig_env=_write(ctx, _missing_objects(ctx)),
                args=("--context", "missing-cluster"), kubectl_error=LOCALHOST_8080,
                plugin_error=r'^context "missing-cluster" names cluster "garbage", which is not defined')


@case
def confirm_usable_empty_config(ctx):
    # validation_test.go TestConfirmUsableEmptyConfig / TestValidateEmptyConfig: an empty file
    return Case("", FALLBACK, kubeconfig_env=_write(ctx, ""), kubectl_error=LOCALHOST_8080,
                plugin_error=r"^no configuration has been provided")


@case
def confirm_usable_missing_config(ctx):
    # validation_test.go TestConfirmUsableMissingConfig: an empty file and a context that is not in it
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, ""), args=("--context", "not-here"),
                plugin_error=r'^context "not-here" does not exist', kubectl_error=r'context "not-here" does not exist')


@case
def validate_missing_current_context(ctx):
    # validation_test.go TestValidateMissingCurrentContextConfig; loader_test.go TestLoadingEmptyMaps
    config = kubeconfig({}, {}, {}, "anything")
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, config), kubectl_error=NO_SUCH_CONTEXT,
                plugin_error=r"^context was not found for specified context: anything")


@case
def validate_missing_references(ctx):
    # validation_test.go TestValidateMissingReferencesConfig
    config = kubeconfig({}, {}, {"anything": ("missing", "missing")}, "anything")
    return Case("", FALLBACK, kubeconfig_env=_write(ctx, config), kubectl_error=LOCALHOST_8080,
                plugin_error=r'^context "anything" names cluster "missing", which is not defined')


@case
def validate_empty_context(ctx):
    # validation_test.go TestValidateEmptyContext
    config = kubeconfig({}, {}, {}, "anything")
    config["contexts"] = [{"name": "anything", "context": {}}]
    return Case("", FALLBACK, kubeconfig_env=_write(ctx, config), kubectl_error=LOCALHOST_8080,
                plugin_error=r'^context "anything" names no cluster')


@case
def validate_empty_context_name(ctx):
    # validation_test.go TestValidateEmptyContextName: a context named "", the current context "anything"
    config = kubeconfig({}, {}, {"": ("missing", "missing")}, "anything")
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, config), kubectl_error=NO_SUCH_CONTEXT,
                plugin_error=r"^context was not found for specified context: anything")


@case
def validate_empty_cluster_info(ctx):
    # validation_test.go TestValidateEmptyClusterInfo / TestValidateClusterInfoErrEmptyCluster
    config = kubeconfig({"empty": {}}, {"u": {"token": _token(ctx)}}, {"ctx": ("empty", "u")}, "ctx")
    return Case("", FALLBACK, kubeconfig_env=_write(ctx, config), kubectl_error=LOCALHOST_8080,
                plugin_error=r'^no server found for cluster "empty"')


@case
def validate_missing_ca_file_cluster_info(ctx):
    # validation_test.go TestValidateMissingCAFileClusterInfo
    config = kubeconfig({"missing ca": _cluster(ctx, **{"certificate-authority": "missing",
                                                         "certificate-authority-data": None})},
                        {"u": {"token": _token(ctx)}}, {"ctx": ("missing ca", "u")}, "ctx")
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, config),
                plugin_error=r"^unable to read certificate-authority .*/missing for missing ca due to open",
                kubectl_error=r"unable to read certificate-authority")


@case
def validate_clean_cluster_info(ctx):
    # validation_test.go TestValidateCleanClusterInfo: a server and nothing else (the system's CAs)
    config = _clean(ctx, **{"certificate-authority-data": None})
    return Case("", SAME, kubeconfig_env=_write(ctx, config), env={"SSL_CERT_FILE": ctx.main.ca_file})


@case
def validate_clean_with_ca_cluster_info(ctx):
    # validation_test.go TestValidateCleanWithCAClusterInfo: certificate-authority names an empty file. Valid for
    # clientcmd; then kubectl 1.37 trusts nothing (an empty pool: transport.go rootCertPool with the
    # ClientsAllowCARotation gate), even with the server's CA among the system's; the plugin refuses the file.
    ctx.write("empty-ca.crt", "")
    config = _clean(ctx, **{"certificate-authority": ctx.path("empty-ca.crt"), "certificate-authority-data": None})
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, config), env={"SSL_CERT_FILE": ctx.main.ca_file},
                plugin_error=r"^unable to load root certificates: the certificate-authority .*empty-ca\.crt of "
                             r"cluster clean holds no PEM block$", kubectl_error=r"x509: certificate signed by unknown")


@case
def validate_empty_auth_info(ctx):
    # validation_test.go TestValidateEmptyAuthInfo: valid for clientcmd, then kubectl prompts
    return Case("", FALLBACK, kubeconfig_env=_write(ctx, _clean(ctx, user={})), kubectl_error=PROMPT,
                plugin_error=r'^user "clean" has no credentials \(nothing;')


@case
def validate_cert_files_not_found_auth_info(ctx):
    # validation_test.go TestValidateCertFilesNotFoundAuthInfo: both files reported
    user = {"client-certificate": "missing", "client-key": "missing"}
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, _clean(ctx, user=user)),
                plugin_error=r"^invalid configuration, 2 problems: \(1\) unable to read client-cert .*/missing for "
                             r"clean due to open .*; \(2\) unable to read client-key .*/missing for clean due to",
                kubectl_error=r"(?s)unable to read client-cert.*unable to read client-key")


@case
def validate_cert_data_overrides_files(ctx):
    # validation_test.go TestValidateCertDataOverridesFiles: both pairs reported
    empty = ctx.write("tempfile", "")
    user = {"client-certificate": empty, "client-certificate-data": _b64(b"certdata"), "client-key": empty,
            "client-key-data": _b64(b"keydata")}
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, _clean(ctx, user=user)),
                plugin_error=r"^invalid configuration, 2 problems: \(1\) client-cert-data and client-cert are both "
                             r"specified for clean\. .*; \(2\) client-key-data and client-key are both specified",
                kubectl_error=r"(?s)client-cert-data and client-cert are both.*client-key-data and client-key are both")


@case
def validate_clean_cert_files_auth_info(ctx):
    # validation_test.go TestValidateCleanCertFilesAuthInfo: valid for clientcmd (the files exist, empty);
    # loading them fails in both
    empty = ctx.write("tempfile", "")
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, _clean(ctx, user={"client-certificate": empty,
                                                                              "client-key": empty})),
                plugin_error=r"the client key of user clean holds no PEM private key",
                kubectl_error=r"failed to find any PEM data")


@case
def validate_clean_token_auth_info(ctx):
    # validation_test.go TestValidateCleanTokenAuthInfo
    return Case("", SAME, kubeconfig_env=_write(ctx, _clean(ctx, user={"token": "any-value"})))


@case
def validate_multiple_methods_auth_info(ctx):
    # validation_test.go TestValidateMultipleMethodsAuthInfo: a token and a username
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, _clean(ctx, user={"token": "token",
                                                                              "username": "username"})),
                plugin_error=r"^more than one authentication method found for clean; found \[token basicAuth\]",
                kubectl_error=r"more than one authentication method found for clean")


def _exec(ctx, **fields):
    spec = {"command": "/bin/example", "apiVersion": NOT_A_GROUP, "args": ["hello", "world"],
            "env": [{"name": "foo", "value": "bar"}], "interactiveMode": "IfAvailable"}
    spec.update(fields)
    spec = {key: value for key, value in spec.items() if value is not None}
    config = kubeconfig({"clean": _cluster(ctx)}, {"user": {"exec": spec}}, {"clean": ("clean", "user")}, "clean")
    return _write(ctx, config)


@case
def validate_auth_info_exec(ctx):
    # validation_test.go TestValidateAuthInfoExec: valid for clientcmd; its apiVersion is then refused by both
    return Case("", BOTH_REFUSE, kubeconfig_env=_exec(ctx),
                plugin_error=r'^exec plugin: invalid apiVersion "clientauthentication\.k8s\.io/v1alpha1"',
                kubectl_error=r'invalid apiVersion "clientauthentication\.k8s\.io/v1alpha1"')


@case
def validate_auth_info_exec_no_version(ctx):
    # validation_test.go TestValidateAuthInfoExecNoVersion
    return Case("", BOTH_REFUSE, kubeconfig_env=_exec(ctx, apiVersion=None, args=None, env=None),
                plugin_error=r"^apiVersion must be specified for user to use exec authentication plugin$",
                kubectl_error=r"apiVersion must be specified for user to use exec authentication plugin")


@case
def validate_auth_info_exec_no_command(ctx):
    # validation_test.go TestValidateAuthInfoExecNoCommand
    return Case("", BOTH_REFUSE, kubeconfig_env=_exec(ctx, command=None, args=None, env=None),
                plugin_error=r"^command must be specified for user to use exec authentication plugin$",
                kubectl_error=r"command must be specified for user to use exec authentication plugin")


@case
def validate_auth_info_exec_with_auth_provider(ctx):
    # validation_test.go TestValidateAuthInfoExecWithAuthProvider
    path = _exec(ctx, args=None, env=None)
    config = yaml.safe_load(open(path))
    config["users"][0]["user"]["auth-provider"] = {"name": "oidc"}
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, config),
                plugin_error=r"^authProvider cannot be provided in combination with an exec plugin for user$",
                kubectl_error=r"authProvider cannot be provided in combination with an exec plugin for user")


@case
def validate_auth_info_exec_no_env(ctx):
    # validation_test.go TestValidateAuthInfoExecNoEnv: an env entry with an empty value is fine (here with an
    # exec API version and a plugin that exist, so that both clients run it)
    script = ctx.exec_script("example", _token(ctx), V1BETA1)
    return Case("", SAME, kubeconfig_env=_exec(ctx, command=script, apiVersion=V1BETA1,
                                              env=[{"name": "foo", "value": ""}]))


@case
def validate_auth_info_exec_interactive_mode_missing(ctx):
    # validation_test.go TestValidateAuthInfoExecInteractiveModeMissing (no defaulting outside the exec API group)
    return Case("", BOTH_REFUSE, kubeconfig_env=_exec(ctx, interactiveMode=None, args=None, env=None),
                plugin_error=r"^interactiveMode must be specified for user to use exec authentication plugin$",
                kubectl_error=r"interactiveMode must be specified for user")


@case
def validate_auth_info_exec_interactive_mode_invalid(ctx):
    # validation_test.go TestValidateAuthInfoExecInteractiveModeInvalid
    return Case("", BOTH_REFUSE, kubeconfig_env=_exec(ctx, interactiveMode="invalid", args=None, env=None),
                plugin_error=r'^invalid interactiveMode for user: "invalid"$',
                kubectl_error=r'invalid interactiveMode for user: "invalid"')


def _impersonating(ctx, **user):
    config = kubeconfig({"clean": _cluster(ctx)}, {"user": user}, {"clean": ("clean", "user")}, "clean")
    return _write(ctx, config)


@case
def validate_auth_info_impersonate_user(ctx):
    # validation_test.go TestValidateAuthInfoImpersonateUser: valid for clientcmd, no credentials: kubectl prompts
    return Case("", FALLBACK, kubeconfig_env=_impersonating(ctx, **{"as": "user"}), kubectl_error=PROMPT,
                plugin_error=r'^user "user" has no credentials \(only impersonation settings')


EVERYTHING = {"as": "user", "as-uid": "abc123", "as-groups": ["group-1", "group-2"],
              "as-user-extra": {"key": ["val1", "val2"]}}


@case
def validate_auth_info_impersonate_everything(ctx):
    # validation_test.go TestValidateAuthInfoImpersonateEverything (as it is: no credentials)
    return Case("", FALLBACK, kubeconfig_env=_impersonating(ctx, **EVERYTHING), kubectl_error=PROMPT,
                plugin_error=r'^user "user" has no credentials \(only impersonation settings')


@case
def validate_auth_info_impersonate_everything_with_a_token(ctx):
    # validation_test.go TestValidateAuthInfoImpersonateEverything, with a token: the same Impersonate-* headers
    return Case("", SAME, kubeconfig_env=_impersonating(ctx, token=ctx.token("admin"), **EVERYTHING))


@case
def validate_auth_info_impersonate_groups_without_user_invalid(ctx):
    # validation_test.go TestValidateAuthInfoImpersonateGroupsWithoutUserInvalid
    return Case("", BOTH_REFUSE, kubeconfig_env=_impersonating(ctx, **{"as-groups": ["group-1", "group-2"]}),
                plugin_error=r"^requesting uid, groups or user-extra for user without impersonating a user$",
                kubectl_error=r"requesting uid, groups or user-extra for user without impersonating a user")


@case
def validate_auth_info_impersonate_extra_without_user_invalid(ctx):
    # validation_test.go TestValidateAuthInfoImpersonateExtraWithoutUserInvalid
    return Case("", BOTH_REFUSE, kubeconfig_env=_impersonating(ctx, **{"as-user-extra": {"key": ["val1", "val2"]}}),
                plugin_error=r"^requesting uid, groups or user-extra for user without impersonating a user$",
                kubectl_error=r"requesting uid, groups or user-extra for user without impersonating a user")


@case
def validate_auth_info_impersonate_uid_without_user_invalid(ctx):
    # validation_test.go TestValidateAuthInfoImpersonateUIDWithoutUserInvalid
    return Case("", BOTH_REFUSE, kubeconfig_env=_impersonating(ctx, **{"as-uid": "abc123"}),
                plugin_error=r"^requesting uid, groups or user-extra for user without impersonating a user$",
                kubectl_error=r"requesting uid, groups or user-extra for user without impersonating a user")


# ---------------------------------------------------------------------------------------------
# loader_test.go


@case
def loader_non_existent_command_line_file(ctx):
    # loader_test.go TestNonExistentCommandLineFile
    return Case("", BOTH_REFUSE, args=("--kubeconfig", ctx.path("bogus_file")),
                plugin_error=r"^kubeconfig .*/bogus_file does not exist$", kubectl_error=r"bogus_file")


@case
def loader_tolerating_missing_files(ctx):
    # loader_test.go TestToleratingMissingFiles / TestWarningMissingFiles: KUBECONFIG of missing files only
    return Case("", FALLBACK, kubeconfig_env=os.pathsep.join(ctx.path(name) for name in ("bogus1", "bogus2", "bogus3")),
                kubectl_error=LOCALHOST_8080, plugin_error=r"^no configuration has been provided")


@case
def loader_error_reading_file(ctx):
    # loader_test.go TestErrorReadingFile: a file holding "bogus value"
    path = ctx.write("config", "bogus value")
    return Case("", BOTH_REFUSE, args=("--kubeconfig", path), plugin_error=r"^kubeconfig .*/config must be a mapping",
                kubectl_error=r"/config")


@case
def loader_error_reading_non_file(ctx):
    # loader_test.go TestErrorReadingNonFile: --kubeconfig names a folder
    os.makedirs(ctx.path("folder", "x"))
    return Case("", BOTH_REFUSE, args=("--kubeconfig", os.path.dirname(ctx.path("folder", "x"))),
                plugin_error=r"is a folder, not a file$", kubectl_error=r"is a directory")


@case
def loader_conflicting_current_context(ctx):
    # loader_test.go TestConflictingCurrentContext: --kubeconfig wins over KUBECONFIG, current-context included
    explicit = _write(ctx, _clean(ctx), "explicit")
    other = _write(ctx, kubeconfig({}, {}, {}, "a-different-context"), "env")
    return Case("", SAME, kubeconfig_env=other, args=("--kubeconfig", explicit))


@case
def loader_encode_yaml(ctx):
    # loader_test.go TestEncodeYAML: the file Write gives (names that look like numbers quoted, users: null, a
    # context with user ""): no user, so kubectl prompts and the plugin sends no credentials
    text = ('apiVersion: v1\nclusters:\n- cluster:\n    server: %(s)s\n  name: "0"\n- cluster:\n    server: %(s)s\n'
            '  name: "1"\n- cluster:\n    certificate-authority-data: %(ca)s\n    server: %(s)s\n  name: "433e40"\n'
            'contexts:\n- context:\n    cluster: "433e40"\n    user: ""\n  name: "433e40"\n'
            'current-context: "433e40"\nkind: Config\nusers: null\n' % {"s": ctx.main.url, "ca": ctx.ca_data()})
    return Case("", ANONYMOUS, kubeconfig_env=ctx.write("config", text), kubectl_error=PROMPT)


DUPLICATES = """
kind: Config
apiVersion: v1
clusters:
- cluster:
    api-version: v1
    server: https://kubernetes.default.svc:443
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
  name: kubeconfig-cluster
%(cluster)scontexts:
- context:
    cluster: kubeconfig-cluster
    namespace: default
    user: kubeconfig-user
  name: kubeconfig-context
%(context)scurrent-context: kubeconfig-context
users:
- name: kubeconfig-user
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
%(user)s%(extensions)s"""


def _duplicates(ctx, **parts):
    values = {"cluster": "", "context": "", "user": "", "extensions": ""}
    values.update(parts)
    return ctx.write("config", DUPLICATES % values)


@case
def loader_duplicate_cluster_name(ctx):
    # loader_test.go TestDuplicateClusterName
    second = ("- cluster:\n    api-version: v2\n    server: https://test.example.server:443\n"
              "    certificate-authority: /var/run/secrets/test.example.io/serviceaccount/ca.crt\n"
              "  name: kubeconfig-cluster\n")
    return Case("", BOTH_REFUSE, kubeconfig_env=_duplicates(ctx, cluster=second),
                plugin_error=r'duplicate name "kubeconfig-cluster" in clusters$',
                kubectl_error=r'duplicate name "kubeconfig-cluster" in list')


@case
def loader_duplicate_context_name(ctx):
    # loader_test.go TestDuplicateContextName
    second = ("- context:\n    cluster: test-example-cluster\n    namespace: test-example\n"
              "    user: test-example-user\n  name: kubeconfig-context\n")
    return Case("", BOTH_REFUSE, kubeconfig_env=_duplicates(ctx, context=second),
                plugin_error=r'duplicate name "kubeconfig-context" in contexts$',
                kubectl_error=r'duplicate name "kubeconfig-context" in list')


@case
def loader_duplicate_user_name(ctx):
    # loader_test.go TestDuplicateUserName
    second = ("- name: kubeconfig-user\n  user:\n"
              "    tokenFile: /var/run/secrets/test.example.com/serviceaccount/token\n")
    return Case("", BOTH_REFUSE, kubeconfig_env=_duplicates(ctx, user=second),
                plugin_error=r'duplicate name "kubeconfig-user" in users$',
                kubectl_error=r'duplicate name "kubeconfig-user" in list')


@case
def loader_duplicate_extension_name(ctx):
    # loader_test.go TestDuplicateExtensionName
    extensions = ("extensions:\n- extension:\n    bytes: test\n  name: test-extension\n"
                  "- extension:\n    bytes: some-example\n  name: test-extension\n")
    return Case("", BOTH_REFUSE, kubeconfig_env=_duplicates(ctx, extensions=extensions),
                plugin_error=r'duplicate name "test-extension" in extensions$',
                kubectl_error=r'duplicate name "test-extension" in list')


def _relative_paths(ctx):
    """loader_test.go TestResolveRelativePaths: two files in different folders naming files relative to them."""
    files = ctx.main.client_cert_files("alice@example.com")
    ctx.write("one/relative/client/cert", open(files.cert).read())
    ctx.write("relative/client/key", open(files.key).read())
    ctx.write("relative/ca", open(ctx.main.ca_file).read())
    ctx.write("two/deeper/relative/client/cert2", open(files.cert).read())
    ctx.write("two/relative/client/key2", open(files.key).read())
    ctx.write("two/relative/ca2", open(ctx.main.ca_file).read())
    ctx.exec_script("cmd", _token(ctx), V1, folder=ctx.path("relative", "client"))
    first = kubeconfig({"relative-server-1": {"server": ctx.main.url, "certificate-authority": "../relative/ca"}},
                       {"relative-user-1": {"client-certificate": "relative/client/cert",
                                            "client-key": "../relative/client/key"},
                        "relative-cmd-1": {"exec": {"command": "../relative/client/cmd", "apiVersion": V1,
                                                    "interactiveMode": "Never"}},
                        "PATH-cmd-1": {"exec": {"command": "cmd", "apiVersion": V1, "interactiveMode": "Never"}}},
                       {"user-1": ("relative-server-1", "relative-user-1"),
                        "cmd-1": ("relative-server-1", "relative-cmd-1"),
                        "path-cmd": ("relative-server-1", "PATH-cmd-1")}, "user-1")
    second = kubeconfig({"relative-server-2": {"server": ctx.main.url, "certificate-authority": "../relative/ca2"}},
                        {"relative-user-2": {"client-certificate": "relative/client/cert2",
                                             "client-key": "../relative/client/key2"}},
                        {"user-2": ("relative-server-2", "relative-user-2")}, "")
    return os.pathsep.join([ctx.write("one/.kubeconfig", first), ctx.write("two/deeper/.kubeconfig", second)])


@case
def loader_resolve_relative_paths_first_file(ctx):
    # loader_test.go TestResolveRelativePaths: relative-user-1 and relative-server-1
    return Case("", SAME, kubeconfig_env=_relative_paths(ctx), cwd="/")


@case
def loader_resolve_relative_paths_second_file(ctx):
    # loader_test.go TestResolveRelativePaths: relative-user-2 and relative-server-2, from the second file's folder
    return Case("", SAME, kubeconfig_env=_relative_paths(ctx), cwd="/", args=("--context", "user-2"))


@case
def loader_resolve_relative_exec_command(ctx):
    # loader_test.go TestResolveRelativePaths: relative-cmd-1 (a command with a slash is resolved too)
    return Case("", SAME, kubeconfig_env=_relative_paths(ctx), cwd="/", args=("--context", "cmd-1"))


@case
def loader_exec_command_from_path(ctx):
    # loader_test.go TestResolveRelativePaths: PATH-cmd-1 (a bare command is looked up on PATH, not resolved)
    kubeconfig_env = _relative_paths(ctx)
    return Case("", SAME, kubeconfig_env=kubeconfig_env, cwd="/", args=("--context", "path-cmd"),
                path_first=ctx.path("relative", "client"))


@case
def loader_deduplicate(ctx):
    # loader_test.go TestDeduplicate / TestLoadingGetLoadingPrecedence: KUBECONFIG a:a:b:b:c:b
    a = _write(ctx, _clean(ctx), "a")
    b = _write(ctx, kubeconfig({}, {"clean": {"token": "not used"}}, {}, "other"), "b")
    c = _write(ctx, kubeconfig({}, {}, {}, "nor this"), "c")
    return Case("", SAME, kubeconfig_env=os.pathsep.join([a, a, b, b, c, b]))


# ---------------------------------------------------------------------------------------------
# client_config_test.go


@case
def client_config_create_clean(ctx):
    # client_config_test.go TestCreateClean / TestCreateCleanDefault (createValidTestConfig)
    return Case("", SAME, kubeconfig_env=_write(ctx, _clean(ctx, user={"token": "the-token"})))


@case
def client_config_insecure_with_ca_data(ctx):
    # client_config_test.go TestInsecureOverridesCA (createCAValidTestConfig plus insecure in the file)
    config = _clean(ctx, **{"certificate-authority-data": _b64(b"\x00\x00"), "insecure-skip-tls-verify": True})
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, config),
                plugin_error=r"^specifying a root certificates file with the insecure flag is not allowed",
                kubectl_error=r"specifying a root certificates file with the insecure flag is not allowed")


@case
def client_config_ca_data_of_two_zero_bytes(ctx):
    # client_config_test.go createCAValidTestConfig: CertificateAuthorityData []byte{0, 0}
    config = _clean(ctx, **{"certificate-authority-data": _b64(b"\x00\x00")})
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, config),
                plugin_error=r"^unable to load root certificates: the certificate-authority-data of cluster clean "
                             r"holds no PEM block$",
                kubectl_error=r"unable to load root certificates: unable to parse bytes as PEM block")


@case
def client_config_ca_file_overrides_ca_data(ctx):
    # client_config_test.go TestCAOverridesCAData: a CA file and CA data in one cluster
    config = _clean(ctx, **{"certificate-authority": ctx.main.ca_file})
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, config),
                plugin_error=r"^certificate-authority-data and certificate-authority are both specified for clean",
                kubectl_error=r"certificate-authority-data and certificate-authority are both specified for clean")


@case
def client_config_tls_server_name(ctx):
    # client_config_test.go TestTLSServerName
    config = _clean(ctx, user={"token": ctx.token("bob@example.com", "sni")}, server=ctx.servers.sni.url,
                    **{"certificate-authority-data": ctx.ca_data("sni"), "tls-server-name": corpus.SNI_NAME})
    return Case("", SAME, server="sni", kubeconfig_env=_write(ctx, config))


@case
def client_config_tls_server_name_and_an_http_server(ctx):
    # client_config_test.go TestTLSServerNameClearsWhenServerNameSet: server http://something
    config = _clean(ctx, server=ctx.main.url.replace("https://", "http://"), **{"tls-server-name": "x"})
    return Case("", FALLBACK, kubeconfig_env=_write(ctx, config), kubectl_error=r".",
                plugin_error=r"is not an https:// URL: kubectl would send its requests unencrypted")


@case
def client_config_full_impersonate_config(ctx):
    # client_config_test.go TestFullImpersonateConfig (its user has no credentials: kubectl prompts)
    user = {"as": "alice", "as-uid": "abc123", "as-groups": ["group-1"], "as-user-extra": {"some-key": ["some-value"]}}
    return Case("", FALLBACK, kubeconfig_env=_write(ctx, _clean(ctx, user=user)), kubectl_error=PROMPT,
                plugin_error=r'^user "clean" has no credentials')


@case
def client_config_certificate_data(ctx):
    # client_config_test.go TestCertificateData: "ca-data", "cert-data", "key-data" (no PEM at all)
    config = _clean(ctx, user={"client-certificate-data": _b64(b"cert-data"), "client-key-data": _b64(b"key-data")},
                    **{"certificate-authority-data": _b64(b"ca-data")})
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, config),
                plugin_error=r"holds no PEM (private key|block)", kubectl_error=r"PEM")


def _proxy_url(ctx, url):
    return _write(ctx, _clean(ctx, **{"proxy-url": url}))


@case
def client_config_proxy_url_socks5(ctx):
    # client_config_test.go TestProxyURL "socks5 proxy-url" (the test proxy in place of example.com)
    return Case("", SAME, kubeconfig_env=_proxy_url(ctx, ctx.servers.socks_proxy.url), proxy="socks5")


@case
def client_config_proxy_url_http(ctx):
    # client_config_test.go TestProxyURL "http proxy-url"
    return Case("", SAME, kubeconfig_env=_proxy_url(ctx, ctx.servers.http_proxy.url), proxy="http")


@case
def client_config_proxy_url_https(ctx):
    # client_config_test.go TestProxyURL "https proxy-url": the proxy verified with the cluster's CA data
    ca = _b64(open(ctx.servers.proxy_ca_file, "rb").read() + open(ctx.main.ca_file, "rb").read())
    config = _clean(ctx, **{"proxy-url": ctx.servers.https_proxy.url, "certificate-authority-data": ca})
    return Case("", SAME, kubeconfig_env=_write(ctx, config), proxy="https")


@case
def client_config_proxy_url_bad_scheme(ctx):
    # client_config_test.go TestProxyURL "bad scheme proxy-url"
    return Case("", BOTH_REFUSE, kubeconfig_env=_proxy_url(ctx, "socks6://example.com"),
                plugin_error=r"unsupported scheme 'socks6', must be http, https, or socks5$",
                kubectl_error=r'invalid .proxy-url. "socks6://example.com" for cluster "clean"')


@case
def client_config_proxy_url_no_scheme(ctx):
    # client_config_test.go TestProxyURL "no scheme proxy-url"
    return Case("", BOTH_REFUSE, kubeconfig_env=_proxy_url(ctx, "example.com"),
                plugin_error=r"^invalid 'proxy-url' example\.com for cluster 'clean'",
                kubectl_error=r'invalid .proxy-url. "example.com" for cluster "clean"')


@case
def client_config_proxy_url_not_a_url(ctx):
    # client_config_test.go TestProxyURL "not a url proxy-url"
    return Case("", BOTH_REFUSE, kubeconfig_env=_proxy_url(ctx, "chewbacca@example.com"),
                plugin_error=r"^invalid 'proxy-url' .* for cluster 'clean'",
                kubectl_error=r'invalid .proxy-url. .* for cluster "clean"')


@case
def client_config_basic_auth_data(ctx):
    # client_config_test.go TestBasicAuthData: myuser/mypass (both answered 401 alike)
    config = _clean(ctx, user={"username": "myuser", "password": "mypass"}, server=ctx.servers.special.url,
                    **{"certificate-authority-data": ctx.ca_data("special")})
    return Case("", SAME, server="special", kubeconfig_env=_write(ctx, config))


@case
def client_config_basic_token_file(ctx):
    # client_config_test.go TestBasicTokenFile: a token file without a line break
    path = ctx.write("tokenfile", _token(ctx))
    return Case("", SAME, kubeconfig_env=_write(ctx, _clean(ctx, user={"tokenFile": path})))


@case
def client_config_precedence_token_file(ctx):
    # client_config_test.go TestPrecedenceTokenFile: token and tokenFile; on the wire the file's token is sent
    path = ctx.write("tokenfile", _token(ctx))
    return Case("", SAME, kubeconfig_env=_write(ctx, _clean(ctx, user={"token": "expected", "tokenFile": path})))


@case
def client_config_create_clean_with_prefix(ctx):
    # client_config_test.go TestCreateCleanWithPrefix: https://anything.com:8080/foo/bar (a path prefix)
    config = _clean(ctx, user={"token": ctx.token("bob@example.com", "special")},
                    server=ctx.servers.special.url + corpus.PREFIX, **{"certificate-authority-data": ctx.ca_data(
                        "special")})
    return Case("", SAME, server="special", kubeconfig_env=_write(ctx, config))


@case
def client_config_create_clean_with_prefix_http(ctx):
    # client_config_test.go TestCreateCleanWithPrefix: http://anything.com:8080/foo/bar
    return Case("", FALLBACK, kubeconfig_env=_write(ctx, _clean(ctx, server=ctx.main.url.replace("https:", "http:")
                                                                 + "/foo/bar")),
                kubectl_error=r".", plugin_error=r"is not an https:// URL")


@case
def client_config_create_clean_with_prefix_no_scheme(ctx):
    # client_config_test.go TestCreateCleanWithPrefix: anything.com:8080/foo/bar (no scheme: plain HTTP in kubectl)
    return Case("", FALLBACK, kubeconfig_env=_write(ctx, _clean(ctx, server=ctx.main.url[len("https://"):]
                                                                 + "/foo/bar")),
                kubectl_error=r".", plugin_error=r"has no https:// scheme")


@case
def client_config_create_clean_with_prefix_empty_server(ctx):
    # client_config_test.go TestCreateCleanWithPrefix: "" (kubectl's default, http://localhost:8080)
    return Case("", FALLBACK, kubeconfig_env=_write(ctx, _clean(ctx, server="")), kubectl_error=LOCALHOST_8080,
                plugin_error=r'^no server found for cluster "clean"')


@case
def client_config_create_missing_context(ctx):
    # client_config_test.go TestCreateMissingContext / TestCreateMissingContextNoDefault
    config = _clean(ctx)
    config["current-context"] = "not-present"
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, config), kubectl_error=NO_SUCH_CONTEXT,
                plugin_error=r"^context was not found for specified context: not-present")


@case
def client_config_exec_install_hint_cleanup(ctx):
    # client_config_test.go TestCreateAuthConfigExecInstallHintCleanup: control characters in the install hint of
    # a missing plugin are never printed raw
    spec = {"apiVersion": V1BETA1, "command": "some-command", "interactiveMode": "IfAvailable",
            "installHint": "some install hint with \x1b[1mcontrol chars\x1b[0m\nand a newline"}
    os.makedirs(ctx.bin, exist_ok=True)
    return Case("", BOTH_REFUSE, kubeconfig_env=_write(ctx, _clean(ctx, user={"exec": spec})), path_first=ctx.bin,
                path_only=True,
                plugin_error=r"some-command not found.*some install hint with U\+001B\[1mcontrol charsU\+001B\[0m "
                             r"and a",
                kubectl_error=r"some install hint with U\+001B\[1mcontrol charsU\+001B\[0m")


# ---------------------------------------------------------------------------------------------
# api/v1/defaults_test.go


def _defaults(ctx, api_version, mode=None):
    script = ctx.exec_script("get-token", _token(ctx), api_version)
    spec = {"apiVersion": api_version, "command": script}
    if mode:
        spec["interactiveMode"] = mode
    return _write(ctx, _clean(ctx, user={"exec": spec}))


@case
def defaults_alpha_exec_api_with_empty_interactive_mode(ctx):
    # api/v1/defaults_test.go TestSetDefaults_Config "alpha exec API with empty interactive mode": defaulted, then
    # the v1alpha1 API itself is refused by both
    return Case("", BOTH_REFUSE, kubeconfig_env=_defaults(ctx, V1ALPHA1),
                plugin_error=r'invalid apiVersion "client\.authentication\.k8s\.io/v1alpha1"',
                kubectl_error=r'invalid apiVersion "client\.authentication\.k8s\.io/v1alpha1"')


@case
def defaults_beta_exec_api_with_empty_interactive_mode(ctx):
    # api/v1/defaults_test.go "beta exec API with empty interactive mode": IfAvailable
    return Case("", SAME, kubeconfig_env=_defaults(ctx, V1BETA1))


@case
def defaults_alpha_exec_api_with_set_interactive_mode(ctx):
    # api/v1/defaults_test.go "alpha exec API with set interactive mode"
    return Case("", BOTH_REFUSE, kubeconfig_env=_defaults(ctx, V1ALPHA1, "Never"),
                plugin_error=r'invalid apiVersion "client\.authentication\.k8s\.io/v1alpha1"',
                kubectl_error=r'invalid apiVersion "client\.authentication\.k8s\.io/v1alpha1"')


@case
def defaults_beta_exec_api_with_set_interactive_mode(ctx):
    # api/v1/defaults_test.go "beta exec API with set interactive mode"
    return Case("", SAME, kubeconfig_env=_defaults(ctx, V1BETA1, "Never"))


@case
def defaults_v1_exec_api_with_empty_interactive_mode(ctx):
    # api/v1/defaults_test.go "v1 exec API with empty interactive mode": not defaulted, so refused
    return Case("", BOTH_REFUSE, kubeconfig_env=_defaults(ctx, V1),
                plugin_error=r"^interactiveMode must be specified for clean to use exec authentication plugin$",
                kubectl_error=r"interactiveMode must be specified for clean")
