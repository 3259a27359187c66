package plan

// SecretRoute says where a worker reads a secret that a `secret:` entity file keeps in a secret
// manager other than the worker's default store: the manager, the path in it and, for a KV
// secret of several fields, the field. Values are never held.
type SecretRoute struct {
	Manager SecretManager `json:"manager"`
	Path    string        `json:"path"`
	Key     string        `json:"key"`
}

// SecretManager is a secret manager connector (type Vault or AwsSecretManager). Its own
// credentials are named secrets of the default store, never held.
type SecretManager struct {
	ID   string `json:"id"`
	Type string `json:"type"` // Vault, AwsSecretManager
	URL  string `json:"url,omitempty"`
	// Aws is how an AwsSecretManager connector signs in, with the region its secrets are in.
	Aws *AwsConnector `json:"aws,omitempty"`
	// Engine is the KV secrets engine's mount (secretEngineName) and EngineVersion its version,
	// 1 or 2. BasePath is where inline secrets live inside it.
	Engine        string `json:"engine,omitempty"`
	EngineVersion int    `json:"engineVersion,omitempty"`
	BasePath      string `json:"basePath,omitempty"`
	Namespace     string `json:"namespace,omitempty"`
	// Auth is TOKEN (TokenRef), APP_ROLE (AppRoleID and SecretIDRef) or K8s_AUTH (a login with
	// the worker's service account token at K8sTokenPath, as K8sRole, at auth path K8sAuthPath).
	Auth         string `json:"auth,omitempty"`
	TokenRef     string `json:"tokenRef,omitempty"`
	AppRoleID    string `json:"appRoleId,omitempty"`
	SecretIDRef  string `json:"secretIdRef,omitempty"`
	K8sRole      string `json:"k8sRole,omitempty"`
	K8sAuthPath  string `json:"k8sAuthPath,omitempty"`
	K8sTokenPath string `json:"k8sTokenPath,omitempty"`
	// RenewalMinutes is how often the worker renews its Vault token (renewalIntervalMinutes; 0:
	// never, the token lives as Vault made it).
	RenewalMinutes int      `json:"renewalMinutes,omitempty"`
	Selectors      []string `json:"selectors,omitempty"`
}
