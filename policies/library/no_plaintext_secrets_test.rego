package gantry.no_plaintext_secrets_test

import data.gantry.no_plaintext_secrets
import rego.v1

vars(v) := {"pipeline": {"variables": [v]}}

test_plain_password_denied if count(no_plaintext_secrets.deny) == 1 with input as vars({"name": "db_password", "type": "String", "value": "hunter2"})

test_stage_token_denied if {
	count(no_plaintext_secrets.deny) == 1 with input as {"pipeline": {"stages": [{"stage": {"variables": [{"name": "API_TOKEN", "type": "String", "value": "abc"}]}}]}}
}

test_secret_type_allowed if count(no_plaintext_secrets.deny) == 0 with input as vars({"name": "db_password", "type": "Secret", "value": "db_pw"})

test_reference_allowed if count(no_plaintext_secrets.deny) == 0 with input as vars({"name": "token", "type": "String", "value": "<+secrets.getValue(\"t\")>"})

test_other_names_allowed if count(no_plaintext_secrets.deny) == 0 with input as vars({"name": "region", "type": "String", "value": "eu"})
