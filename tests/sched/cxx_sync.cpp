// cxx_sync.cpp -- std::thread, std::mutex and std::condition_variable under the scheduler:
// libstdc++ reaches the interposed pthread functions (pthread_cond_wait through its versioned
// symbol).  Three threads wait for `ready`, then add their number; prints 6.  Usage: cxx_sync POOL
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

static std::mutex m;
static std::condition_variable cv;
static int ready;
static long total;

int main()
{
	std::vector<std::thread> ts;
	for (int i = 0; i < 3; i++)
		ts.emplace_back([i] {
			std::unique_lock<std::mutex> l(m);
			cv.wait(l, [] { return ready != 0; });
			total += i + 1;
		});
	{
		std::lock_guard<std::mutex> g(m);
		ready = 1;
	}
	cv.notify_all();
	for (auto &t : ts)
		t.join();
	std::printf("%ld\n", total);
	return 0;
}
