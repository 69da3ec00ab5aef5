#pragma once
// Everything a program needs to run agent workspaces on exe.dev and manage their VMs.

#include <exedev/client.hpp>
#include <exedev/errors.hpp>
#include <exedev/sandbox/errors.hpp>
#include <exedev/sandbox/lookup.hpp>
#include <exedev/sandbox/sandbox.hpp>
#include <exedev/sandbox/sandbox_backend.hpp>
#include <exedev/sandbox/vm_spec.hpp>
#include <exedev/sandbox/vm_state.hpp>
#include <exedev/sandbox/vms.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>
