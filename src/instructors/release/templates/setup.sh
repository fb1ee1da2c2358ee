#!/usr/bin/env bash
# Run once by the grading server when it builds the image: installs Python and
# the starter's requirements into a virtual environment that run_autograder
# uses (readable by every user: submitted code runs on it), and makes the
# unprivileged user that submitted code runs as.
#
# Environment (defaults are the grading server's):
#   AUTOGRADER_SOURCE  where this bundle was unpacked            (/autograder/source)
#   AUTOGRADER_VENV    the virtual environment to make           (/autograder/venv)
#   AUTOGRADER_APT     1 to install python3 with apt-get first   (1; 0 skips it)
#   AUTOGRADER_USER    the user to make for submitted code       (student; empty skips it)
set -euo pipefail

source_dir="${AUTOGRADER_SOURCE:-/autograder/source}"
venv_dir="${AUTOGRADER_VENV:-/autograder/venv}"
user="${AUTOGRADER_USER-student}"

if [ "${AUTOGRADER_APT:-1}" = 1 ]; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y python3 python3-pip python3-venv procps
fi
if [ -n "$user" ] && ! id -u "$user" >/dev/null 2>&1; then
  useradd --no-create-home --shell /usr/sbin/nologin "$user"
fi
python3 -m venv "$venv_dir"
"$venv_dir/bin/python" -m pip install --no-cache-dir --upgrade pip
"$venv_dir/bin/python" -m pip install --no-cache-dir -r "$source_dir/starter/requirements.txt"
chmod -R go+rX "$venv_dir"
