package steps

import (
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/stepspec"
)

// The S3 cache and upload steps' specs, shared with the container family (stepspec).
type (
	CacheS3        = stepspec.CacheS3
	SaveCacheS3    = stepspec.SaveCacheS3Spec
	RestoreCacheS3 = stepspec.RestoreCacheS3Spec
	S3Upload       = stepspec.S3UploadSpec
)

func checkCacheS3(c Checker, sp *CacheS3) {
	c.Enum(sp.Node, "archiveFormat", sp.ArchiveFormat, []string{"Tar", "Gzip", "Zstd"}, "archiveFormat")
	if sp.ArchiveFormat == "Zstd" {
		c.Unsupported(pipeline.ValueAt(sp.Node, "archiveFormat"), "unsupported-field", "archiveFormat Zstd: Gantry writes Tar and Gzip caches").
			SetHint("archiveFormat: Gzip")
	}
	c.Boolean(sp.Node, "pathStyle", string(sp.PathStyle))
	c.Integer(sp.Node, "runAsUser", sp.RunAsUser, 0, false, "runAsUser")
	if sp.BaseImageConnectorRefs != nil {
		c.Ignored(sp.BaseImageConnectorRefs, "baseImageConnectorRefs", "the worker moves the archive; no image is pulled")
	}
	if sp.Resources != nil {
		c.Ignored(sp.Resources.Node, "resources", "the worker moves the archive; the step has no container of its own")
	}
}

// checkSaveCacheS3 checks the archive settings.
func checkSaveCacheS3(sp *SaveCacheS3, c Checker) {
	checkCacheS3(c, &sp.CacheS3)
	c.Boolean(sp.Node, "override", string(sp.Override))
}

// checkRestoreCacheS3 checks the archive settings.
func checkRestoreCacheS3(sp *RestoreCacheS3, c Checker) {
	checkCacheS3(c, &sp.CacheS3)
	c.Boolean(sp.Node, "failIfKeyNotFound", string(sp.FailIfKeyNotFound))
	ignoredTrue(c, sp.Node, "preserveMetadata", sp.PreserveMetadata, "files are restored with the archive's modes")
}

// checkS3Upload warns of the container settings the worker-run upload has no use for.
func checkS3Upload(sp *S3Upload, c Checker) {
	c.Integer(sp.Node, "runAsUser", sp.RunAsUser, 0, false, "runAsUser")
	if sp.BaseImageConnectorRefs != nil {
		c.Ignored(sp.BaseImageConnectorRefs, "baseImageConnectorRefs", "the worker uploads the files; no image is pulled")
	}
	if sp.Resources != nil {
		c.Ignored(sp.Resources.Node, "resources", "the worker uploads the files; the step has no container of its own")
	}
}
