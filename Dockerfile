# tcprepro: every paper's tables, figures and verdicts from one `docker run`.
#
#   docker build -t tcprepro .      (scripts/docker-image: the same on a machine with nothing ready)
#   docker run --rm -v "$PWD/results:/repro/results" -v "$PWD/figures:/repro/figures" tcprepro [smoke|quick|full]
#
# The code lives in /opt/tcprepro; a run writes only under /repro (results/, figures/), so mounting
# those two folders hides nothing the workflow needs. The default lanes need no privilege at all;
# docs/usage.md ("Docker") says what the host-kernel lane would need.
FROM debian:bookworm-slim

ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /opt/tcprepro

# The Debian packages `make deps` installs on a host (config/system-packages.txt): the testbed's
# tools, QEMU with the pinned Debian kernel and virtme-ng's needs for the VM fallback, clang and
# libbpf for the BPF congestion controls. The slowest layer, so first. The pinned kernel gets no
# initrd (INITRD=No: virtme-ng boots it with its own) and the downloaded .debs are removed in the
# same layer, about 330 MB less: a base made by debootstrap (scripts/docker-image) keeps apt's cache.
COPY config/system-packages.txt config/
COPY scripts/install-system scripts/
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends make ca-certificates \
 && INITRD=No scripts/install-system \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*

# Python: the same venv and pinned set as on a host (requirements.lock), before the code so that
# an edit to the code does not reinstall them.
# Certificates in docker/ca-certificates/ (a TLS-intercepting proxy's; scripts/docker-image copies
# the host's) are trusted for pip, which otherwise reads only its own bundle.
COPY docker/ca-certificates/ /usr/local/share/ca-certificates/
COPY requirements.lock ./
RUN update-ca-certificates >/dev/null \
 && python3 -m venv --system-site-packages .venv \
 && PIP_CERT=/etc/ssl/certs/ca-certificates.crt .venv/bin/pip install -q -r requirements.lock

# The UML lane's kernel (testbed/uml_kernel.py), built from what decides it alone, so that an edit to
# other code keeps this layer: about 5 minutes on 2 cores; the source package is not kept. One that
# scripts/docker-image found built on a Debian 12 host for the same key (docker/uml-kernel/) is
# used instead of compiling it again.
COPY configuration/__init__.py configuration/environment.py configuration/
COPY testbed/__init__.py testbed/uml_kernel.py testbed/
COPY kernel/ kernel/
COPY cc/ledbat/ cc/ledbat/
COPY config/congestion_controls.yaml config/
COPY docker/uml-kernel/ build/uml/
RUN .venv/bin/python -m testbed.uml_kernel build \
 && rm -rf build/uml/sources build/uml/.lock build/uml/README.md

COPY . .
# The results folder is /repro/results: the VM lane shares it with the guest (testbed/shared_vm.py).
# The staged kernel came in twice (above, and with the checkout): this copy is not the one used.
RUN rm -rf results .snakemake docker/uml-kernel/*/ \
 && make deps \
 && mkdir -p /repro/results /repro/figures \
 && ln -s /repro/results results

VOLUME ["/repro/results", "/repro/figures"]
ENTRYPOINT ["/opt/tcprepro/docker/entrypoint"]
CMD ["quick"]
