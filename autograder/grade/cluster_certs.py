"""`course cluster --certs DIR`: the Dask cluster's own CA and one certificate per role.

A Dask cluster without TLS lets anyone who reaches the scheduler's port run code
in every worker (``Client.run``), and a worker grades as root: it could patch the
grader and give any score. With Dask's TLS (``distributed.security.Security``)
both ends of every connection show a certificate signed by the cluster's CA, so
only a holder of one of these keys connects, as a client or as a worker.

The CA's key signs the three certificates and is never written, so nothing can
add a certificate to a set: a new set, in a new folder, replaces it (each term,
or when a key may have leaked). Keys are created 0600 in a 0700 folder, owned by
whoever runs the command, and are never readable by anyone else in between.
The client's certificate is for client authentication only: a stolen client
key cannot pose as the scheduler or a worker.
"""

from __future__ import annotations

import datetime
import os
from typing import TYPE_CHECKING

from autograder.errors import CourseError

if TYPE_CHECKING:
    from autograder.course.config import Course

CA = "ca.pem"
# role -> whether its certificate also serves connections (the scheduler and the workers listen)
ROLES = {"scheduler": True, "worker": True, "client": False}
VALID_DAYS = 400          # a term and its regrades


def files(role: str) -> tuple[str, str]:
    """The certificate's and the key's file names of ``role``."""
    return f"{role}.pem", f"{role}-key.pem"


def _write(folder, name, data, mode):
    fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as fh:
        os.fchmod(fd, mode)           # whatever the umask
        fh.write(data)


def _folder(folder):
    """Create ``folder`` 0700, or take an empty one of this account's and make it 0700."""
    try:
        os.makedirs(folder, mode=0o700)
    except FileExistsError:
        if not os.path.isdir(folder) or os.path.islink(folder):
            raise CourseError(f"{folder}: not a folder") from None
        if os.listdir(folder):
            raise CourseError(f"{folder} is not empty: give a new folder for a new set of certificates "
                              "(a set is replaced whole, never added to)") from None
        if os.stat(folder).st_uid != os.geteuid():
            raise CourseError(f"{folder} belongs to another account: give a folder of your own") from None
    os.chmod(folder, 0o700)


def make(folder: str, name: str) -> dict[str, str | tuple[str, str]]:
    """Write ``ca.pem`` and each role's certificate and key into ``folder``; return their paths.
    ``name`` (the course id) goes into every certificate's subject."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    _folder(folder)
    now = datetime.datetime.now(datetime.timezone.utc)
    until = now + datetime.timedelta(days=VALID_DAYS)

    def subject(what):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} cluster {what}")])

    def certificate(subject_name, key, issuer_name, signer, extensions):
        builder = (x509.CertificateBuilder().subject_name(subject_name).issuer_name(issuer_name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(until)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical=critical)
        return builder.sign(signer, hashes.SHA256())

    def usage(**allowed):
        flags = dict.fromkeys(("digital_signature", "content_commitment", "key_encipherment",
                               "data_encipherment", "key_agreement", "key_cert_sign", "crl_sign",
                               "encipher_only", "decipher_only"), False)
        return x509.KeyUsage(**dict(flags, **allowed))

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = certificate(subject("CA"), ca_key, subject("CA"), ca_key, [
        (x509.BasicConstraints(ca=True, path_length=0), True),
        (usage(key_cert_sign=True, crl_sign=True), True)])
    pem = serialization.Encoding.PEM
    _write(folder, CA, ca.public_bytes(pem), 0o644)
    paths: dict[str, str | tuple[str, str]] = {"ca": os.path.join(folder, CA)}
    for role, serves in ROLES.items():
        key = ec.generate_private_key(ec.SECP256R1())
        purposes = [ExtendedKeyUsageOID.CLIENT_AUTH] + ([ExtendedKeyUsageOID.SERVER_AUTH] if serves else [])
        cert = certificate(subject(role), key, ca.subject, ca_key, [
            (x509.BasicConstraints(ca=False, path_length=None), True),
            (usage(digital_signature=True), True),
            (x509.ExtendedKeyUsage(purposes), False),
            (x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False)])
        cert_name, key_name = files(role)
        _write(folder, key_name, key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()), 0o600)
        _write(folder, cert_name, cert.public_bytes(pem), 0o644)
        paths[role] = (os.path.join(folder, cert_name), os.path.join(folder, key_name))
    return paths


def command(course: Course, certs: str) -> None:
    """`course cluster --certs DIR`: make the set in ``certs`` (outside the course folder, where
    `git add -A` would commit the keys); print where each file goes and course.yaml's lines."""
    folder = os.path.abspath(certs)
    root = os.path.realpath(course.root)
    if os.path.commonpath([os.path.realpath(folder), root]) == root:
        raise CourseError(f"{certs} is inside the course folder, where `git add -A` would commit the "
                          "keys: give a folder outside it (e.g. ~/attention-cluster)")
    try:
        made = make(folder, course.course_id)
    except ImportError:
        raise CourseError("course cluster needs the cluster extra: pip install -e '.[cluster]'") from None
    print(f"{folder}: the cluster's certificates, valid {VALID_DAYS} days; keys mode 600, "
          "readable by this account only; the CA's key was not kept (a new set replaces this one whole)")
    where = {"ca": "the scheduler's host, every worker node and here", "scheduler": "the scheduler's host",
             "worker": "every worker node", "client": "here, for course grade (course.yaml's cluster_tls)"}
    for role, paths in made.items():
        names = ", ".join(os.path.basename(p) for p in ([paths] if isinstance(paths, str) else paths))
        print(f"  {names:<34} {where[role]}")
    print(f"in course.yaml:\ncluster_tls:\n  ca: {made['ca']}\n  cert: {made['client'][0]}\n"
          f"  key: {made['client'][1]}")
