package io.github.distlock.sample;

import java.time.Duration;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * The same order logic as {@link OrderService} and {@link StockService} with no lock: what the locks prevent. Do not
 * copy.
 *
 * <p>Between its reads and its writes it pauses {@code sample.unsafe.pause} (20 ms by default), standing in for the
 * work a real service does there (a payment call, a slow query). Without the pause the race is still there, only
 * rarer at demo scale; with it, concurrent duplicates both see "no order yet" and concurrent buyers both see the
 * same stock, so duplicates and overselling show every run.
 */
@Service
public class UnsafeOrderService {

    private final ShopRepository repository;
    private final Duration pause;
    private final SaleRecorder recorder;

    UnsafeOrderService(ShopRepository repository, @Value("${sample.unsafe.pause:20ms}") Duration pause,
            SaleRecorder recorder) {
        this.repository = repository;
        this.pause = pause;
        this.recorder = recorder;
    }

    /** Places the order with check-then-act races on both rules. */
    @Transactional
    public Order placeOrder(long userId, long productId, int quantity) throws InterruptedException {
        if (repository.hasOrder(userId, productId)) {
            throw new DuplicateOrderException(userId, productId);
        }
        // the section StockService runs under the product lock, here unguarded (recorded for the dashboard's timeline)
        try (SaleRecorder.Section section = recorder.enter(productId, userId)) {
            Product product = repository.findProduct(productId)
                    .orElseThrow(() -> new ProductNotFoundException(productId));
            if (product.stock() < quantity) {
                throw new OutOfStockException(productId, quantity, product.stock());
            }
            if (!pause.isZero()) {
                Thread.sleep(pause.toMillis());
            }
            repository.updateStockUnguarded(productId, product.stock() - quantity);
            Order order = repository.insertOrder(userId, productId, quantity);
            section.sold();
            return order;
        }
    }
}
