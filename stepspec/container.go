package stepspec

// The container step types, run by the container family (one kind each) in a CI stage's pod,
// a containerized step group's pod or on a build machine.
const (
	// The command steps: their command runs in a container of the group's pod (or on a build
	// machine, as a process or in a container of their image).
	Run        = "Run"
	RunTests   = "RunTests"
	Background = "Background"
	Plugin     = "Plugin"
	// Container runs its command in a pod of its own.
	Container = "Container"
	// The image builds, in the BuildKit image.
	BuildAndPushDockerRegistry = "BuildAndPushDockerRegistry"
	BuildAndPushECR            = "BuildAndPushECR"
	// The steps the worker does for the pod through its helper container.
	GitClone          = "GitClone"
	SaveCacheS3       = "SaveCacheS3"
	RestoreCacheS3    = "RestoreCacheS3"
	S3Upload          = "S3Upload"
	DownloadManifests = "DownloadManifests"
)
