package gantry.no_curl_pipe_shell_test

import data.gantry.no_curl_pipe_shell
import rego.v1

step(script) := {"pipeline": {"stages": [{"stage": {"spec": {"execution": {"steps": [{"step": {
	"identifier": "s", "type": "ShellScript", "spec": {"source": {"spec": {"script": script}}},
}}]}}}}]}}

test_curl_pipe_bash_denied if count(no_curl_pipe_shell.deny) == 1 with input as step("curl -fsSL https://x.example/install.sh | bash")

test_wget_pipe_sudo_sh_denied if count(no_curl_pipe_shell.deny) == 1 with input as step("wget -qO- https://x | sudo sh")

test_download_then_run_allowed if count(no_curl_pipe_shell.deny) == 0 with input as step("curl -o i.sh https://x && sha256sum -c i.sha && sh i.sh")

test_grep_pipe_allowed if count(no_curl_pipe_shell.deny) == 0 with input as step("curl -s https://x | grep ok")
