// test_fault_env.cpp — MICRODDP_FAULT_* -> core::FaultPlan (app/fault_env.hpp), no MPI:
//   * unset variables arm nothing; NAN, PERTURB and KILL_AT/_RANK/_SAVE arm the named points at the
//     given rank and occurrence (step or save number), with the parameter as PERTURB's argument;
//     EXIT and EXTRA_COLLECTIVE arm the communicator's points at a sequence number (EXIT's code as
//     the argument, 3 by default);
//   * malformed values, unknown save points and bad ranks are UsageErrors naming the variable;
//   * the process environment is read too (the form `train` uses).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "app/fault_env.hpp"
#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "ddp/trainer.hpp"

namespace microddp::app {
namespace {

namespace point = ddp::trainer_fault_point;

// An environment made of a map, so the tests do not touch the process's.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(FaultEnv, UnsetArmsNothing) {
  const FakeEnv env;
  EXPECT_TRUE(fault_plan_from_env(env.lookup()).empty());
  const FakeEnv empty{{{"MICRODDP_FAULT_NAN", ""}, {"MICRODDP_FAULT_KILL_AT", ""}}};
  EXPECT_TRUE(fault_plan_from_env(empty.lookup()).empty());
}

TEST(FaultEnv, ArmsTheNamedPoints) {
  const FakeEnv env{{{"MICRODDP_FAULT_NAN", "2:15:grad"}, {"MICRODDP_FAULT_PERTURB", "1:7:layer_00.bias"}}};
  const core::FaultPlan plan = fault_plan_from_env(env.lookup());
  EXPECT_EQ(plan.armed().size(), 2u);
  EXPECT_NE(plan.fires(point::kNanGradient, 2, 15), nullptr);
  EXPECT_EQ(plan.fires(point::kNanInput, 2, 15), nullptr) << "grad, not input";
  EXPECT_EQ(plan.fires(point::kNanGradient, 1, 15), nullptr) << "another rank";
  EXPECT_EQ(plan.fires(point::kNanGradient, 2, 14), nullptr) << "another step";
  const core::ArmedFault* p = plan.fires(point::kPerturbParameter, 1, 7);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->arg, "layer_00.bias");

  // Defaults: NaN in the input; the perturbed parameter is layer_01.weight.
  const FakeEnv defaults{{{"MICRODDP_FAULT_NAN", "0:3"}, {"MICRODDP_FAULT_PERTURB", "2:4"}}};
  const core::FaultPlan d = fault_plan_from_env(defaults.lookup());
  EXPECT_NE(d.fires(point::kNanInput, 0, 3), nullptr);
  ASSERT_NE(d.fires(point::kPerturbParameter, 2, 4), nullptr);
  EXPECT_EQ(d.fires(point::kPerturbParameter, 2, 4)->arg, "layer_01.weight");
}

TEST(FaultEnv, KillPointOfASave) {
  const FakeEnv env{{{"MICRODDP_FAULT_KILL_AT", "after_fsync"},
                     {"MICRODDP_FAULT_KILL_SAVE", "2"},
                     {"MICRODDP_FAULT_KILL_RANK", "1"}}};
  const core::FaultPlan plan = fault_plan_from_env(env.lookup());
  EXPECT_NE(plan.fires("after_fsync", 1, 2), nullptr);
  EXPECT_EQ(plan.fires("after_fsync", 0, 2), nullptr);
  EXPECT_EQ(plan.fires("after_fsync", 1, 1), nullptr);
  // Defaults: rank 0, the first save.
  const FakeEnv defaults{{{"MICRODDP_FAULT_KILL_AT", "mid_retention"}}};
  EXPECT_NE(fault_plan_from_env(defaults.lookup()).fires("mid_retention", 0, 1), nullptr);
}

TEST(FaultEnv, BadValuesNameTheVariable) {
  for (const char* bad : {"3", "x:1", "1:0", "1:2:sideways", "-1:4", "1:4x", ":4", "1:"}) {
    const FakeEnv env{{{"MICRODDP_FAULT_NAN", bad}}};
    try {
      (void)fault_plan_from_env(env.lookup());
      ADD_FAILURE() << "MICRODDP_FAULT_NAN=" << bad << " was accepted";
    } catch (const core::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("MICRODDP_FAULT_NAN"), std::string::npos) << e.what();
    }
  }
  const std::map<std::string, std::string> cases[] = {
      {{"MICRODDP_FAULT_PERTURB", "1"}},
      {{"MICRODDP_FAULT_KILL_AT", "after_lunch"}},
      {{"MICRODDP_FAULT_KILL_AT", "begin"}, {"MICRODDP_FAULT_KILL_RANK", "-1"}},
      {{"MICRODDP_FAULT_KILL_AT", "begin"}, {"MICRODDP_FAULT_KILL_SAVE", "0"}},
      {{"MICRODDP_FAULT_KILL_AT", "begin"}, {"MICRODDP_FAULT_KILL_SAVE", "two"}},
  };
  for (const auto& vars : cases) {
    const FakeEnv env{vars};
    std::string names;
    for (const auto& [k, v] : vars) names += k + "=" + v + " ";
    try {
      (void)fault_plan_from_env(env.lookup());
      ADD_FAILURE() << names << "was accepted";
    } catch (const core::UsageError& e) {
      const std::string m = e.what();
      bool named = false;
      for (const auto& [k, v] : vars)
        named = named || (m.find(k) != std::string::npos && m.find(v) != std::string::npos);
      EXPECT_TRUE(named) << names << "-> " << m;
    }
  }
}

TEST(FaultEnv, CommunicatorHooks) {
  namespace cp = comm::comm_fault_point;
  const FakeEnv env{{{"MICRODDP_FAULT_EXIT", "2:1500:7"}, {"MICRODDP_FAULT_EXTRA_COLLECTIVE", "1:30"}}};
  const core::FaultPlan plan = fault_plan_from_env(env.lookup());
  ASSERT_NE(plan.fires(cp::kExit, 2, 1500), nullptr);
  EXPECT_EQ(plan.fires(cp::kExit, 2, 1500)->arg, "7");
  EXPECT_NE(plan.fires(cp::kExtraCollective, 1, 30), nullptr);
  EXPECT_EQ(plan.fires(cp::kExit, 1, 1500), nullptr) << "another rank";
  const FakeEnv defaults{{{"MICRODDP_FAULT_EXIT", "0:4"}}};
  ASSERT_NE(fault_plan_from_env(defaults.lookup()).fires(cp::kExit, 0, 4), nullptr);
  EXPECT_EQ(fault_plan_from_env(defaults.lookup()).fires(cp::kExit, 0, 4)->arg, "3");  // the default code

  const std::pair<const char*, const char*> bad[] = {{"MICRODDP_FAULT_EXIT", "1:0"},
                                                     {"MICRODDP_FAULT_EXIT", "1"},
                                                     {"MICRODDP_FAULT_EXIT", "a:b"},
                                                     {"MICRODDP_FAULT_EXIT", "1:2:300"},
                                                     {"MICRODDP_FAULT_EXIT", "1:2:-1"},
                                                     {"MICRODDP_FAULT_EXIT", "1:2:3:4"},
                                                     {"MICRODDP_FAULT_EXIT", "-1:5"},
                                                     {"MICRODDP_FAULT_EXIT", "1:5x"},
                                                     {"MICRODDP_FAULT_EXTRA_COLLECTIVE", "1:0"},
                                                     {"MICRODDP_FAULT_EXTRA_COLLECTIVE", "1"},
                                                     {"MICRODDP_FAULT_EXTRA_COLLECTIVE", "1:2:3"},
                                                     {"MICRODDP_FAULT_EXTRA_COLLECTIVE", "x:1"}};
  for (const auto& [var, value] : bad) {
    const FakeEnv e{{{var, value}}};
    try {
      (void)fault_plan_from_env(e.lookup());
      ADD_FAILURE() << var << "=" << value << " was accepted";
    } catch (const core::UsageError& err) {
      EXPECT_NE(std::string(err.what()).find(var), std::string::npos) << err.what();
    }
  }
}

TEST(FaultEnv, ReadsTheProcessEnvironment) {
  ::setenv("MICRODDP_FAULT_NAN", "1:2:input", 1);
  const core::FaultPlan plan = fault_plan_from_env();
  ::unsetenv("MICRODDP_FAULT_NAN");
  EXPECT_NE(plan.fires(point::kNanInput, 1, 2), nullptr);
}

}  // namespace
}  // namespace microddp::app
