package steps

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
)

// CacheS3 is what SaveCacheS3 and RestoreCacheS3 share: the bucket, the key and how the
// archive is written, signed with an Aws connector's credentials (spec 22.2).
type CacheS3 struct {
	Node                   *yaml.Node                   `yaml:"-"`
	ConnectorRef           string                       `yaml:"connectorRef" gantry:"required"`
	Region                 string                       `yaml:"region"`
	Bucket                 string                       `yaml:"bucket" gantry:"required"`
	Key                    string                       `yaml:"key" gantry:"required"`
	Endpoint               string                       `yaml:"endpoint"`
	PathStyle              string                       `yaml:"pathStyle"`
	ArchiveFormat          string                       `yaml:"archiveFormat"`
	BaseImageConnectorRefs *yaml.Node                   `yaml:"baseImageConnectorRefs"`
	Resources              *pipeline.ContainerResources `yaml:"resources"`
	RunAsUser              string                       `yaml:"runAsUser"`
	Description            string                       `yaml:"description"`
}

// SaveCacheS3 archives sourcePaths of the workspace to bucket/key.
type SaveCacheS3 struct {
	CacheS3     `yaml:",inline"`
	SourcePaths *yaml.Node `yaml:"sourcePaths" gantry:"required"`
	Override    string     `yaml:"override"`
}

// RestoreCacheS3 unpacks bucket/key into the workspace.
type RestoreCacheS3 struct {
	CacheS3           `yaml:",inline"`
	FailIfKeyNotFound string `yaml:"failIfKeyNotFound"`
	PreserveMetadata  string `yaml:"preserveMetadata"`
}

func (sp *CacheS3) check(c Checker) {
	c.Enum(sp.Node, "archiveFormat", sp.ArchiveFormat, []string{"Tar", "Gzip", "Zstd"}, "archiveFormat")
	if sp.ArchiveFormat == "Zstd" {
		c.Unsupported(pipeline.ValueAt(sp.Node, "archiveFormat"), "unsupported-field", "archiveFormat Zstd: Gantry writes Tar and Gzip caches").
			SetHint("archiveFormat: Gzip")
	}
	c.Boolean(sp.Node, "pathStyle", sp.PathStyle)
	c.Integer(sp.Node, "runAsUser", sp.RunAsUser, 0, false, "runAsUser")
	if sp.BaseImageConnectorRefs != nil {
		c.Ignored(sp.BaseImageConnectorRefs, "baseImageConnectorRefs", "the worker moves the archive; no image is pulled")
	}
	if sp.Resources != nil {
		c.Ignored(sp.Resources.Node, "resources", "the worker moves the archive; the step has no container of its own")
	}
}

// Check checks the archive settings.
func (sp *SaveCacheS3) Check(c Checker) {
	sp.check(c)
	c.Boolean(sp.Node, "override", sp.Override)
}

// Check checks the archive settings.
func (sp *RestoreCacheS3) Check(c Checker) {
	sp.check(c)
	c.Boolean(sp.Node, "failIfKeyNotFound", sp.FailIfKeyNotFound)
	ignoredTrue(c, sp.Node, "preserveMetadata", sp.PreserveMetadata, "files are restored with the archive's modes")
}

// S3Upload uploads the workspace files sourcePath matches to bucket/target (spec 22.2).
type S3Upload struct {
	Node                   *yaml.Node                   `yaml:"-"`
	ConnectorRef           string                       `yaml:"connectorRef" gantry:"required"`
	Region                 string                       `yaml:"region" gantry:"required"`
	Bucket                 string                       `yaml:"bucket" gantry:"required"`
	SourcePath             string                       `yaml:"sourcePath" gantry:"required"`
	Target                 string                       `yaml:"target"`
	StripPrefix            string                       `yaml:"stripPrefix"`
	Endpoint               string                       `yaml:"endpoint"`
	BaseImageConnectorRefs *yaml.Node                   `yaml:"baseImageConnectorRefs"`
	Resources              *pipeline.ContainerResources `yaml:"resources"`
	RunAsUser              string                       `yaml:"runAsUser"`
	Description            string                       `yaml:"description"`
}

// Check warns of the container settings the worker-run upload has no use for.
func (sp *S3Upload) Check(c Checker) {
	c.Integer(sp.Node, "runAsUser", sp.RunAsUser, 0, false, "runAsUser")
	if sp.BaseImageConnectorRefs != nil {
		c.Ignored(sp.BaseImageConnectorRefs, "baseImageConnectorRefs", "the worker uploads the files; no image is pulled")
	}
	if sp.Resources != nil {
		c.Ignored(sp.Resources.Node, "resources", "the worker uploads the files; the step has no container of its own")
	}
}
