"""Test certificates: a CA, a server certificate and client certificates, as PEM files.

Test-only code (trustme + cryptography). Everything is made fresh at run time; no
key material is ever committed.

How kube-apiserver reads a client certificate (the behaviour the test server copies):
the username is the subject's Common Name and the groups are its Organization values,
in order (Kubernetes docs, "Authenticating" > "X509 client certificates"; source
``staging/src/k8s.io/apiserver/pkg/authentication/request/x509/x509.go``,
``CommonNameUserConversion``).

Typical use::

    ca = make_ca()
    server = write_server_cert(ca, folder)                  # CertFiles(cert, key)
    alice = write_client_cert(ca, folder, "alice",
                              "alice@example.com", ["aicr-approvers"])
    ec = write_client_cert(ca, folder, "alice-ec", "alice@example.com",
                           ["aicr-approvers"], key_type="ec", key_format="pkcs8")
"""

import collections
import datetime
import os

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: Paths of one certificate and its private key (PEM files).
CertFiles = collections.namedtuple("CertFiles", "cert key")

SERVER_NAMES = ("127.0.0.1", "::1", "localhost")
KEY_TYPES = ("rsa", "ec")
KEY_FORMATS = ("traditional", "pkcs8")


def make_ca():
    """Return a fresh ``trustme.CA`` (ECDSA P-256 root, valid for years).

    Its PEM certificate is ``ca.cert_pem.bytes()``; write it with :func:`write_ca`.
    """
    return trustme.CA()


def write_ca(ca, folder, name="ca.crt"):
    """Write the CA certificate as PEM to ``folder/name`` and return the path (str)."""
    path = os.path.join(folder, name)
    ca.cert_pem.write_to_path(path)
    return path


def write_server_cert(ca, folder, names=SERVER_NAMES, stem="server"):
    """Issue a server certificate for ``names`` and write ``folder/<stem>.crt`` and ``.key``.

    ``names`` are IP addresses (written as IP SANs) and DNS names (DNS SANs);
    trustme decides which is which. The default covers 127.0.0.1, ::1 and localhost.
    Returns ``CertFiles(cert, key)``; the key is PKCS#8, unencrypted.
    """
    leaf = ca.issue_cert(*names)
    files = CertFiles(os.path.join(folder, stem + ".crt"), os.path.join(folder, stem + ".key"))
    leaf.cert_chain_pems[0].write_to_path(files.cert)
    leaf.private_key_pem.write_to_path(files.key)
    return files


def write_cn_only_server_cert(ca, folder, name, stem="server-cn-only"):
    """Issue a server certificate whose only name is its subject CN (no subjectAltName at all).

    Go's crypto/x509 (and so kubectl) refuses such a certificate: "x509: certificate
    relies on legacy Common Name field, use SANs instead". Returns ``CertFiles``.
    """
    return _write_server_cert(ca, folder, stem, name, ())


def write_raw_names_server_cert(ca, folder, dns_names=(), ip_addresses=(), stem="server-raw-names"):
    """Issue a server certificate whose DNS SANs are ``dns_names`` exactly as given (``..``, ``a\\x00b``,
    names trustme's IDNA encoding refuses) and whose IP SANs are ``ip_addresses``. Returns ``CertFiles``."""
    import ipaddress

    names = [x509.DNSName(name) for name in dns_names] + [x509.IPAddress(ipaddress.ip_address(address))
                                                          for address in ip_addresses]
    return _write_server_cert(ca, folder, stem, "raw-names", names)


def _write_server_cert(ca, folder, stem, common_name, names):
    """A server certificate signed by ``ca`` (trustme), subject CN ``common_name``, valid from an hour ago for
    30 days, with a subjectAltName of ``names`` (x509 GeneralNames) unless there are none; its PEM files
    ``stem``.crt and ``stem``.key (PKCS#8) in ``folder``. Returns ``CertFiles``."""
    ca_key = serialization.load_pem_private_key(ca.private_key_pem.bytes(), password=None)
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    key = new_private_key("ec")
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    files = CertFiles(os.path.join(folder, stem + ".crt"), os.path.join(folder, stem + ".key"))
    with open(files.cert, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(files.key, "wb") as f:
        f.write(private_key_pem(key, "pkcs8"))
    return files


def new_private_key(key_type="rsa"):
    """Return a new private key: ``"rsa"`` (2048 bits) or ``"ec"`` (P-256)."""
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if key_type == "ec":
        return ec.generate_private_key(ec.SECP256R1())
    raise ValueError("key_type must be one of %s, not %r" % (KEY_TYPES, key_type))


def private_key_pem(key, key_format="traditional", passphrase=None):
    """Serialise ``key`` as PEM bytes.

    ``key_format``: ``"traditional"`` (``BEGIN RSA PRIVATE KEY`` / ``BEGIN EC PRIVATE
    KEY``) or ``"pkcs8"`` (``BEGIN PRIVATE KEY``). With ``passphrase`` (str) the key
    is encrypted: PKCS#8 gives ``BEGIN ENCRYPTED PRIVATE KEY``, traditional gives an
    OpenSSL ``Proc-Type: 4,ENCRYPTED`` block.
    """
    formats = {
        "traditional": serialization.PrivateFormat.TraditionalOpenSSL,
        "pkcs8": serialization.PrivateFormat.PKCS8,
    }
    if key_format not in formats:
        raise ValueError("key_format must be one of %s, not %r" % (KEY_FORMATS, key_format))
    if passphrase is None:
        encryption = serialization.NoEncryption()
    else:
        encryption = serialization.BestAvailableEncryption(passphrase.encode("utf-8"))
    return key.private_bytes(serialization.Encoding.PEM, formats[key_format], encryption)


def issue_client_cert(ca, username, groups=(), key_type="rsa", days=30):
    """Issue a client certificate: subject CN=``username``, one O per group, in order.

    Returns ``(certificate, private_key)`` (cryptography objects). The certificate
    carries ExtendedKeyUsage clientAuth and is signed by the trustme ``ca``.
    """
    ca_key = serialization.load_pem_private_key(ca.private_key_pem.bytes(), password=None)
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    key = new_private_key(key_type)
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, username)]
    attributes += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attributes))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_encipherment=(key_type == "rsa"),
                content_commitment=False, data_encipherment=False, key_agreement=False,
                key_cert_sign=False, crl_sign=False, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    )
    return builder.sign(ca_key, hashes.SHA256()), key


def write_client_cert(ca, folder, stem, username, groups=(), key_type="rsa",
                      key_format="traditional", passphrase=None):
    """Issue a client certificate (see :func:`issue_client_cert`) and write it as PEM.

    Files: ``folder/<stem>.crt`` and ``folder/<stem>.key``; the key in
    ``key_format`` and, with ``passphrase``, encrypted (see :func:`private_key_pem`).
    Returns ``CertFiles(cert, key)``.
    """
    cert, key = issue_client_cert(ca, username, groups, key_type)
    files = CertFiles(os.path.join(folder, stem + ".crt"), os.path.join(folder, stem + ".key"))
    with open(files.cert, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(files.key, "wb") as f:
        f.write(private_key_pem(key, key_format, passphrase))
    os.chmod(files.key, 0o600)
    return files


def peer_subject(peercert):
    """``{"cn": CN, "o": [O, ...]}`` of a client certificate as ``SSLSocket.getpeercert()`` gives it: the
    username and groups kube-apiserver reads from it (see above)."""
    cn, orgs = None, []
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                cn = value
            elif key == "organizationName":
                orgs.append(value)
    return {"cn": cn, "o": orgs}
